package benchmarks

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/env/classic"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/client"
	"github.com/onnxrl/sampler/externalenv/server"
	"github.com/onnxrl/sampler/inference"
)

// servedPolicy is `sample serve` in-process over real loopback TCP (httptest): an
// ExternalEnv with CartPole's spaces and room for maxEpisodes, driven by a runner with the
// bundled MLP (one batched inference per step), and /v1/act on a PolicyActor.
type servedPolicy struct {
	url     string
	hs      *httptest.Server
	srv     *server.Server
	sampler *server.Sampler
	runner  *envrunner.Runner
	actor   *server.PolicyActor
}

func serve(b *testing.B, maxEpisodes int, record bool, maxWait time.Duration) *servedPolicy {
	b.Helper()
	p := cartpoleMLP(b)
	cp, err := classic.NewCartPole(nil)
	if err != nil {
		b.Fatal(err)
	}
	obs, act := cp.ObservationSpace(), cp.ActionSpace()
	e, err := externalenv.New(externalenv.Options{ObservationSpace: obs, ActionSpace: act, MaxConcurrentEpisodes: maxEpisodes,
		MaxWait: maxWait})
	if err != nil {
		b.Fatal(err)
	}
	s := &servedPolicy{}
	s.actor, err = server.NewPolicyActor(server.PolicyOptions{Policy: p, Action: connectors.ActionConfig{Explore: true}, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	s.srv, err = server.New(server.Options{Env: e, Actor: s.actor})
	if err != nil {
		b.Fatal(err)
	}
	s.runner, err = envrunner.New(envrunner.Config{Env: s.srv.Metrics().ObservePolls(e), NumEnvs: e.NumEnvs(), Seed: 1,
		NoSamples: !record,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: {Policy: p,
			Action: connectors.ActionConfig{Explore: true}, Session: inference.Options{IntraOpThreads: 1, InterOpThreads: 1}}}})
	if err != nil {
		b.Fatal(err)
	}
	var write func(*envrunner.MultiAgentBatch) error
	if record {
		write = func(*envrunner.MultiAgentBatch) error { return nil } // encoded nowhere: the sampler's cost only
	}
	s.sampler = server.StartSampler(s.runner, write)
	s.hs = httptest.NewServer(s.srv)
	s.url = s.hs.URL
	return s
}

// spacesBody returns the server's /v1/spaces answer.
func (s *servedPolicy) spacesBody(b *testing.B) []byte {
	res, err := http.Get(s.url + "/v1/spaces")
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		b.Fatal(err)
	}
	return body
}

func (s *servedPolicy) close(b *testing.B) {
	s.hs.Close()
	if err := s.srv.Close(); err != nil {
		b.Error(err)
	}
	if err := s.sampler.Wait(); err != nil {
		b.Error(err)
	}
	s.runner.Close()
	s.actor.Close()
}

// p99 returns the 99th percentile of d in milliseconds.
func p99(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return float64(d[(len(d)*99)/100].Nanoseconds()) / 1e6
}

const serverClients = 64

// floorHandler answers the episode endpoints at once with fixed bodies: net/http and the
// client with a server that does nothing, the floor BenchmarkServerEpisodes compares with.
func floorHandler(spacesBody []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		switch {
		case r.URL.Path == "/v1/spaces":
			w.Write(spacesBody)
		case r.URL.Path == "/v1/episodes":
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte(`{"episode_id":"x"}`))
		case strings.HasSuffix(r.URL.Path, "/action"):
			w.Write([]byte(`{"action":1}`))
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
}

// episodeLoad runs CartPole-shaped episodes of 100 steps from serverClients goroutines
// through one client until n /action requests have been answered, recording their latencies.
type episodeLoad struct {
	c       *client.Client
	returns bool
	lat     [][]time.Duration
	errs    []error
}

func newEpisodeLoad(b *testing.B, url string, returns bool) *episodeLoad {
	c, err := client.New(url, client.Options{MaxIdleConnsPerHost: 2 * serverClients})
	if err != nil {
		b.Fatal(err)
	}
	return &episodeLoad{c: c, returns: returns, lat: make([][]time.Duration, serverClients), errs: make([]error, serverClients)}
}

func (l *episodeLoad) run(b *testing.B, n int64) time.Duration {
	ctx := context.Background()
	var next atomic.Int64
	episodes := func(g int) error {
		c := l.c
		obs := []float32{0.01, -0.02, 0.03, 0.04}
		var act []float32
		for {
			id, err := c.StartEpisode(ctx, "", true)
			if err != nil {
				return err
			}
			for step := range 100 {
				if next.Add(1) > n {
					return c.EndEpisode(ctx, id, obs)
				}
				obs[0] = float32(step%50) / 100
				t := time.Now()
				if act, err = c.AppendAction(ctx, act[:0], id, obs); err != nil {
					return err
				}
				l.lat[g] = append(l.lat[g], time.Since(t))
				if l.returns {
					if err := c.LogReturns(ctx, id, 1, nil); err != nil {
						return err
					}
				}
			}
			if err := c.EndEpisode(ctx, id, obs); err != nil {
				return err
			}
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for g := range serverClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.errs[g] = episodes(g)
		}()
	}
	wg.Wait()
	d := time.Since(start)
	for _, err := range l.errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	return d
}

func (l *episodeLoad) latencies() []time.Duration {
	var all []time.Duration
	for _, v := range l.lat {
		all = append(all, v...)
	}
	return all
}

// BenchmarkServerEpisodes: 64 client goroutines, each running episodes of 100 steps (an
// /action request per step, with returns=true an /returns request too) against the policy
// server over loopback TCP through the Go client; b.N counts /action requests. The server
// runs the bundled MLP; record=true builds sample batches (dropped, not encoded); maxwait is
// the ExternalEnv's MaxWait (dynamic batching).
//
// The same load runs against a floor, a net/http server whose handler answers at once with
// fixed bodies, interleaved in rounds of 3200 actions so that both see the same machine
// (the 2-core machines we share are noisy): actions/s and p99-ms are the policy server's,
// floor-actions/s the floor's, ratio = server/floor. obs/inference is the mean batch of the
// sampler's inferences, floor-p99-ms the floor's p99 latency.
func BenchmarkServerEpisodes(b *testing.B) {
	for _, bc := range []struct {
		returns, record bool
		maxWait         time.Duration
	}{{false, false, 0}, {false, false, 200 * time.Microsecond}, {true, false, 0}, {false, true, 0}} {
		b.Run(fmt.Sprintf("clients=%d/returns=%v/record=%v/maxwait=%v", serverClients, bc.returns, bc.record, bc.maxWait), func(b *testing.B) {
			s := serve(b, 2*serverClients, bc.record, bc.maxWait)
			defer s.close(b)
			fs := httptest.NewServer(floorHandler(s.spacesBody(b)))
			defer fs.Close()
			load := newEpisodeLoad(b, s.url, bc.returns)
			defer load.c.CloseIdleConnections()
			floor := newEpisodeLoad(b, fs.URL, bc.returns)
			defer floor.c.CloseIdleConnections()
			load.run(b, 20*serverClients) // connections and sessions warm
			floor.run(b, 20*serverClients)
			for g := range serverClients {
				load.lat[g] = make([]time.Duration, 0, b.N/serverClients+128)
				floor.lat[g] = make([]time.Duration, 0, b.N/serverClients+128)
			}
			steps0, obs0 := s.srv.Metrics().PollBatches()
			const round = 50 * serverClients
			var serverT, floorT time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += round {
				n := int64(min(round, b.N-done))
				serverT += load.run(b, n)
				b.StopTimer()
				floorT += floor.run(b, n)
				b.StartTimer()
			}
			b.StopTimer()
			steps1, obs1 := s.srv.Metrics().PollBatches()
			sps, fps := float64(b.N)/serverT.Seconds(), float64(b.N)/floorT.Seconds()
			b.ReportMetric(sps, "actions/s")
			b.ReportMetric(p99(load.latencies()), "p99-ms")
			b.ReportMetric(fps, "floor-actions/s")
			b.ReportMetric(p99(floor.latencies()), "floor-p99-ms")
			b.ReportMetric(sps/fps, "ratio")
			b.ReportMetric(float64(obs1-obs0)/float64(max(steps1-steps0, 1)), "obs/inference")
		})
	}
}

// BenchmarkServerAct: /v1/act with 256 CartPole observations per request from several
// concurrent clients over loopback TCP; b.N counts requests. client=raw posts a body encoded
// once (the server's cost: decoding 1024 floats, two sessions' inference, encoding 256
// actions); client=go goes through client.AppendActs, encoding and decoding every request.
// Reports agent-actions/s and the p99 latency of a request in ms.
func BenchmarkServerAct(b *testing.B) {
	const batch = 256
	obs := make([]float32, 0, batch*4)
	for i := range batch {
		x := float32(i%97) / 100
		obs = append(obs, x-0.5, -x, x/10-0.05, 0.5-x)
	}
	var body bytes.Buffer
	body.WriteString(`{"observations":[`)
	for i := range batch {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, "[%g,%g,%g,%g]", obs[4*i], obs[4*i+1], obs[4*i+2], obs[4*i+3])
	}
	body.WriteString(`]}`)
	raw := body.Bytes()
	for _, mode := range []string{"raw", "go"} {
		for _, clients := range []int{2, 4, 8} {
			b.Run(fmt.Sprintf("client=%s/clients=%d/obs=%d", mode, clients, batch), func(b *testing.B) {
				s := serve(b, 16, false, 0)
				defer s.close(b)
				c, err := client.New(s.url, client.Options{MaxIdleConnsPerHost: clients})
				if err != nil {
					b.Fatal(err)
				}
				defer c.CloseIdleConnections()
				hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}}
				defer hc.CloseIdleConnections()
				ctx := context.Background()
				one := func(dst []float32, rd *bytes.Reader, respBuf *bytes.Buffer) ([]float32, error) {
					if mode == "go" {
						return c.AppendActs(ctx, dst[:0], obs, batch, nil)
					}
					rd.Reset(raw)
					res, err := hc.Post(s.url+"/v1/act", "application/json", rd)
					if err != nil {
						return dst, err
					}
					respBuf.Reset()
					_, err = respBuf.ReadFrom(res.Body)
					res.Body.Close()
					if err == nil && (res.StatusCode != 200 || !strings.HasPrefix(respBuf.String(), `{"actions":[`)) {
						err = fmt.Errorf("status %d: %.200s", res.StatusCode, respBuf.String())
					}
					return dst, err
				}
				var next atomic.Int64
				lat := make([][]time.Duration, clients)
				errs := make([]error, clients)
				run := func(n int64) {
					next.Store(0)
					var wg sync.WaitGroup
					for g := range clients {
						wg.Add(1)
						go func() {
							defer wg.Done()
							var dst []float32
							var rd bytes.Reader
							var rb bytes.Buffer
							for next.Add(1) <= n {
								t := time.Now()
								var err error
								if dst, err = one(dst, &rd, &rb); err != nil {
									errs[g] = err
									return
								}
								lat[g] = append(lat[g], time.Since(t))
							}
						}()
					}
					wg.Wait()
					for _, err := range errs {
						if err != nil {
							b.Fatal(err)
						}
					}
				}
				run(int64(4 * clients))
				for g := range lat {
					lat[g] = make([]time.Duration, 0, b.N/clients+16)
				}
				b.ReportAllocs()
				b.ResetTimer()
				run(int64(b.N))
				b.StopTimer()
				var all []time.Duration
				for _, l := range lat {
					all = append(all, l...)
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "agent-actions/s")
				b.ReportMetric(p99(all), "p99-ms")
			})
		}
	}
}
