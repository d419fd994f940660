package server

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/onnxrl/sampler/env"
)

// endpoint identifies an API endpoint in the metrics.
type endpoint int

const (
	epStart endpoint = iota
	epAction
	epLogAction
	epReturns
	epEnd
	epAct
	epSpaces
	epHealth
	epMetrics
	epOther
	numEndpoints
)

var endpointNames = [numEndpoints]string{"start_episode", "action", "log_action", "returns", "end_episode",
	"act", "spaces", "healthz", "metrics", "other"}

// statusCodes are the status codes counted by name; the rest count as "other".
var statusCodes = [...]int{200, 201, 204, 400, 401, 403, 404, 405, 409, 413, 415, 429, 499, 500, 501, 503, 504}

const numCodes = len(statusCodes) + 1

func codeIndex(code int) int {
	for i, c := range statusCodes {
		if c == code {
			return i
		}
	}
	return len(statusCodes)
}

// histogram counts observations in cumulative buckets with atomic counters (no lock).
type histogram struct {
	bounds []int64 // upper bounds, in the unit of the observations
	counts []atomic.Int64
	sum    atomic.Int64
	count  atomic.Int64
	scale  float64 // multiplies bounds and sum for the exposition (ns to seconds)
}

func newHistogram(scale float64, bounds ...int64) *histogram {
	return &histogram{bounds: bounds, counts: make([]atomic.Int64, len(bounds)), scale: scale}
}

func (h *histogram) observe(v int64) {
	for i, b := range h.bounds {
		if v <= b {
			h.counts[i].Add(1)
			break
		}
	}
	h.sum.Add(v)
	h.count.Add(1)
}

// write writes the histogram's series; labels is "" or `key="value",`.
func (h *histogram) write(w *bufio.Writer, name, labels string) {
	var cum int64
	for i, b := range h.bounds {
		cum += h.counts[i].Load()
		fmt.Fprintf(w, "%s_bucket{%sle=\"%s\"} %d\n", name, labels, formatFloat(float64(b)*h.scale), cum)
	}
	count := h.count.Load()
	fmt.Fprintf(w, "%s_bucket{%sle=\"+Inf\"} %d\n", name, labels, count)
	if labels != "" {
		labels = "{" + labels[:len(labels)-1] + "}"
	}
	fmt.Fprintf(w, "%s_sum%s %s\n", name, labels, formatFloat(float64(h.sum.Load())*h.scale))
	fmt.Fprintf(w, "%s_count%s %d\n", name, labels, count)
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Metrics are the server's Prometheus metrics: requests by endpoint and status code, request
// latency and /v1/act batch sizes as histograms, the observations the sampler polled per step
// (ObservePolls), and the running episodes. Every method is safe for concurrent use and the
// counters are atomic (no lock on the request path).
type Metrics struct {
	requests  [numEndpoints][numCodes]atomic.Int64
	latency   [numEndpoints]*histogram
	actBatch  *histogram
	pollBatch *histogram
	active    atomic.Int64
	started   atomic.Int64
	ended     atomic.Int64
	truncated atomic.Int64
	expired   atomic.Int64 // episodes ended by the idle timeout
	panics    atomic.Int64 // requests whose handler panicked
	busy      atomic.Int64 // requests refused: too many body bytes in flight
}

// NewMetrics returns zeroed metrics.
func NewMetrics() *Metrics {
	m := &Metrics{}
	us := int64(time.Microsecond)
	for i := range m.latency {
		m.latency[i] = newHistogram(1e-9, 100*us, 250*us, 500*us, 1000*us, 2500*us, 5000*us, 10000*us,
			25000*us, 50000*us, 100000*us, 250000*us, 1000000*us, 5000000*us)
	}
	sizes := []int64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}
	m.actBatch = newHistogram(1, sizes...)
	m.pollBatch = newHistogram(1, sizes...)
	return m
}

func (m *Metrics) request(ep endpoint, code int, d time.Duration) {
	m.requests[ep][codeIndex(code)].Add(1)
	m.latency[ep].observe(int64(d))
}

// Requests returns the number of requests to an endpoint ("action", "act", ...) answered
// with the status code, for tests and tools.
func (m *Metrics) Requests(name string, code int) int64 {
	for i, n := range endpointNames {
		if n == name {
			return m.requests[i][codeIndex(code)].Load()
		}
	}
	return 0
}

// ActiveEpisodes returns the number of running episodes.
func (m *Metrics) ActiveEpisodes() int64 { return m.active.Load() }

// PollBatches returns the number of sampler steps with observations and the observations
// they answered (the sample_serve_poll_batch_size histogram's count and sum).
func (m *Metrics) PollBatches() (steps, observations int64) {
	return m.pollBatch.count.Load(), m.pollBatch.sum.Load()
}

// EpisodesStarted returns the number of episodes started.
func (m *Metrics) EpisodesStarted() int64 { return m.started.Load() }

// WriteTo writes the metrics in the Prometheus text exposition format (version 0.0.4).
func (m *Metrics) WriteTo(out io.Writer) (int64, error) {
	cw := &countWriter{w: out}
	w := bufio.NewWriter(cw)
	fmt.Fprintln(w, "# HELP sample_serve_requests_total HTTP requests by endpoint and status code.")
	fmt.Fprintln(w, "# TYPE sample_serve_requests_total counter")
	for ep := range numEndpoints {
		for ci := range numCodes {
			n := m.requests[ep][ci].Load()
			if n == 0 {
				continue
			}
			code := "other"
			if ci < len(statusCodes) {
				code = strconv.Itoa(statusCodes[ci])
			}
			fmt.Fprintf(w, "sample_serve_requests_total{endpoint=%q,code=%q} %d\n", endpointNames[ep], code, n)
		}
	}
	fmt.Fprintln(w, "# HELP sample_serve_request_duration_seconds Time from the start of a request to its response, by endpoint.")
	fmt.Fprintln(w, "# TYPE sample_serve_request_duration_seconds histogram")
	for ep := range numEndpoints {
		if m.latency[ep].count.Load() == 0 {
			continue
		}
		m.latency[ep].write(w, "sample_serve_request_duration_seconds", fmt.Sprintf("endpoint=%q,", endpointNames[ep]))
	}
	fmt.Fprintln(w, "# HELP sample_serve_act_batch_size Observations per /v1/act request.")
	fmt.Fprintln(w, "# TYPE sample_serve_act_batch_size histogram")
	m.actBatch.write(w, "sample_serve_act_batch_size", "")
	fmt.Fprintln(w, "# HELP sample_serve_poll_batch_size Observations the sampler answered per step (one batched inference).")
	fmt.Fprintln(w, "# TYPE sample_serve_poll_batch_size histogram")
	m.pollBatch.write(w, "sample_serve_poll_batch_size", "")
	fmt.Fprintln(w, "# HELP sample_serve_active_episodes Episodes started and not ended.")
	fmt.Fprintln(w, "# TYPE sample_serve_active_episodes gauge")
	fmt.Fprintf(w, "sample_serve_active_episodes %d\n", m.active.Load())
	fmt.Fprintln(w, "# HELP sample_serve_episodes_started_total Episodes started.")
	fmt.Fprintln(w, "# TYPE sample_serve_episodes_started_total counter")
	fmt.Fprintf(w, "sample_serve_episodes_started_total %d\n", m.started.Load())
	fmt.Fprintln(w, "# HELP sample_serve_episodes_ended_total Episodes ended by their client.")
	fmt.Fprintln(w, "# TYPE sample_serve_episodes_ended_total counter")
	fmt.Fprintf(w, "sample_serve_episodes_ended_total %d\n", m.ended.Load())
	fmt.Fprintln(w, "# HELP sample_serve_episodes_truncated_total Episodes the server ended (truncated) at shutdown or when idle.")
	fmt.Fprintln(w, "# TYPE sample_serve_episodes_truncated_total counter")
	fmt.Fprintf(w, "sample_serve_episodes_truncated_total %d\n", m.truncated.Load())
	m.writeGuards(w)
	err := w.Flush()
	return cw.n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ObservePolls returns be with every Poll's number of observations recorded in the
// sample_serve_poll_batch_size histogram: give it to the envrunner.Runner that drives the
// server's environment.
func (m *Metrics) ObservePolls(be env.BaseEnv) env.BaseEnv { return &pollObserver{BaseEnv: be, m: m} }

type pollObserver struct {
	env.BaseEnv
	m *Metrics
}

func (p *pollObserver) Poll(dst *env.Batch) error {
	n := len(dst.Agents)
	err := p.BaseEnv.Poll(dst)
	if k := len(dst.Agents) - n; k > 0 {
		p.m.pollBatch.observe(int64(k))
	}
	return err
}

// writeGuards writes the counters of the server's defences.
func (m *Metrics) writeGuards(w *bufio.Writer) {
	fmt.Fprintln(w, "# HELP sample_serve_episodes_expired_total Episodes the server ended (truncated) after the idle timeout.")
	fmt.Fprintln(w, "# TYPE sample_serve_episodes_expired_total counter")
	fmt.Fprintf(w, "sample_serve_episodes_expired_total %d\n", m.expired.Load())
	fmt.Fprintln(w, "# HELP sample_serve_panics_total Requests whose handler panicked (answered 500).")
	fmt.Fprintln(w, "# TYPE sample_serve_panics_total counter")
	fmt.Fprintf(w, "sample_serve_panics_total %d\n", m.panics.Load())
	fmt.Fprintln(w, "# HELP sample_serve_busy_total Requests refused because too many body bytes were in flight.")
	fmt.Fprintln(w, "# TYPE sample_serve_busy_total counter")
	fmt.Fprintf(w, "sample_serve_busy_total %d\n", m.busy.Load())
}

// EpisodesExpired returns the number of episodes ended by the idle timeout.
func (m *Metrics) EpisodesExpired() int64 { return m.expired.Load() }
