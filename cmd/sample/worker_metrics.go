package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/scaleout"
)

// workerMetrics are what sample worker --metrics serves in Prometheus's text format: the
// policy version its batches carry, the newest version it has seen in the bucket, the lag
// between them, and how long the last swap took (from seeing a version to the first batch
// tagged with it), the episodes ended and the mean return and length of the last
// episodeWindow of them, beside the publisher's counters.
type workerMetrics struct {
	sampling atomic.Uint64 // version of the batches published last
	latest   atomic.Uint64 // newest version seen in the bucket
	swapNs   atomic.Int64  // the last swap's time
	swaps    atomic.Int64

	mu   sync.Mutex
	seen map[uint64]time.Time // when each version not yet sampled with was seen
	// Episodes, under mu: counts, and the returns and lengths of the last episodeWindow
	// episodes that were not faulty (a ring from next).
	episodes, faulty int64
	returns, lengths []float64
	next             int
}

// episodeWindow is how many episodes the means are over (RLlib's
// metrics_num_episodes_for_smoothing).
const episodeWindow = 100

// ended counts the episodes in ms.
func (m *workerMetrics) ended(ms []envrunner.RolloutMetrics) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range ms {
		if e.Faulty {
			m.faulty++
			continue
		}
		m.episodes++
		if len(m.returns) < episodeWindow {
			m.returns = append(m.returns, e.EpisodeReturn)
			m.lengths = append(m.lengths, float64(e.EpisodeLength))
			continue
		}
		m.returns[m.next], m.lengths[m.next] = e.EpisodeReturn, float64(e.EpisodeLength)
		m.next = (m.next + 1) % episodeWindow
	}
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// saw records that version v is the newest in the bucket.
func (m *workerMetrics) saw(v uint64) {
	m.mu.Lock()
	if m.seen == nil {
		m.seen = map[uint64]time.Time{}
	}
	m.seen[v] = time.Now()
	m.mu.Unlock()
	for {
		old := m.latest.Load()
		if v <= old || m.latest.CompareAndSwap(old, v) {
			return
		}
	}
}

// sampling records that the batches now carry version v.
func (m *workerMetrics) samplingWith(v uint64) {
	m.sampling.Store(v)
	m.mu.Lock()
	t, ok := m.seen[v]
	for old := range m.seen {
		if old <= v {
			delete(m.seen, old)
		}
	}
	m.mu.Unlock()
	if ok {
		m.swapNs.Store(int64(time.Since(t)))
		m.swaps.Add(1)
	}
}

// write writes the metrics in Prometheus's text format.
func (m *workerMetrics) write(w io.Writer, st scaleout.PublisherStats) {
	cur, latest := m.sampling.Load(), m.latest.Load()
	lag := uint64(0)
	if latest > cur {
		lag = latest - cur
	}
	gauge := func(name, help string, v any) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %v\n", name, help, name, name, v)
	}
	counter := func(name, help string, v int64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
	}
	gauge("sample_worker_policy_version", "Policy version of the batches published last.", cur)
	gauge("sample_worker_policy_latest_version", "Newest policy version seen in the run's policy bucket.", latest)
	gauge("sample_worker_policy_version_lag", "Versions between the newest in the bucket and the one sampled with.", lag)
	gauge("sample_worker_policy_swap_seconds", "Time from seeing the last version taken to its first batch.", time.Duration(m.swapNs.Load()).Seconds())
	counter("sample_worker_policy_swaps_total", "Policy versions taken, the first included.", m.swaps.Load())
	m.mu.Lock()
	episodes, faulty, ret, length := m.episodes, m.faulty, mean(m.returns), mean(m.lengths)
	m.mu.Unlock()
	// The episode metrics under RLlib's new API stack names (envrunner.NewAPIStackMetrics).
	counter("sample_worker_"+envrunner.NumEpisodesLifetime, "Episodes ended (faulty ones not counted).", episodes)
	counter("sample_worker_"+envrunner.NumEnvStepFailures, "Episodes whose sub-environment failed.", faulty)
	gauge("sample_worker_"+envrunner.EpisodeReturnMean, "Mean return of the last 100 episodes (NaN before the first).", ret)
	gauge("sample_worker_"+envrunner.EpisodeLenMean, "Mean length of the last 100 episodes (NaN before the first).", length)
	counter("sample_worker_batches_total", "Sample batches published.", st.Batches)
	counter("sample_worker_rows_total", "Rows published.", st.Rows)
	counter("sample_worker_messages_total", "Messages acknowledged by the stream.", st.Messages)
	counter("sample_worker_full_total", "Publishes refused by a full stream (retried).", st.Full)
}

// serveWorkerMetrics serves GET /metrics on addr until the returned function is called.
func serveWorkerMetrics(addr string, m *workerMetrics, stats func() scaleout.PublisherStats, stderr io.Writer) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		m.write(w, stats())
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(stderr, "sample worker: metrics at http://%s/metrics\n", ln.Addr())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "sample worker: metrics: %v\n", err)
		}
	}()
	return func() { srv.Close(); <-done }, nil
}
