package benchmarks

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/env/classic"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

const runnerEnvs = 256

// floor is the bare loop the runner is measured against: plain Go CartPoles, one ONNX Runtime
// session bound once, argmax, no bookkeeping.
type floor struct {
	envs   []*classic.CartPole
	sess   *inference.Session
	obs    []float32
	logits []float32
	act    [1]float32
	runT   time.Duration
}

func newFloor(tb testing.TB, p *models.Policy, n int) *floor {
	f := &floor{}
	sess, err := inference.NewSession(p.Model, inference.Options{Capacity: n, IntraOpThreads: 1, InterOpThreads: 1})
	if err != nil {
		tb.Fatal(err)
	}
	if err := sess.SetBatch(n); err != nil {
		tb.Fatal(err)
	}
	f.sess = sess
	in, _ := sess.Input("obs")
	out, _ := sess.Output("logits")
	f.obs, f.logits = in.Float32(), out.Float32()
	for i := range n {
		c, err := classic.NewCartPole(nil)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := c.Reset(env.WithSeed(uint64(i)), f.obs[i*4:(i+1)*4]); err != nil {
			tb.Fatal(err)
		}
		f.envs = append(f.envs, c)
	}
	return f
}

// step runs one batched step of every env; it returns the env steps taken.
func (f *floor) step(tb testing.TB) int {
	t := time.Now()
	if err := f.sess.Run(); err != nil {
		tb.Fatal(err)
	}
	f.runT += time.Since(t)
	for i, c := range f.envs {
		a := float32(0)
		if f.logits[2*i+1] > f.logits[2*i] {
			a = 1
		}
		f.act[0] = a
		o := f.obs[i*4 : (i+1)*4]
		res, err := c.Step(f.act[:], o)
		if err != nil {
			tb.Fatal(err)
		}
		if res.Terminated || res.Truncated {
			if _, err := c.Reset(env.Seed{}, o); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return len(f.envs)
}

func cartpoleEnv(tb testing.TB, n, first int) env.BaseEnv {
	v, err := env.NewVectorEnv(func(int) (env.Env, error) { return classic.NewCartPole(nil) }, n)
	if err != nil {
		tb.Fatal(err)
	}
	be, err := env.NewVectorBaseEnv(v, env.BaseEnvOptions{Seed: env.WithSeed(uint64(first))})
	if err != nil {
		tb.Fatal(err)
	}
	return be
}

func newRunner(tb testing.TB, p *models.Policy, n, worker int, explore bool) *envrunner.Runner {
	cfg := envrunner.Config{Env: cartpoleEnv(tb, n, worker*n), NumEnvs: n, Seed: 1, Worker: worker,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: {Policy: p,
			Action:  connectors.ActionConfig{Explore: explore},
			Session: inference.Options{IntraOpThreads: 1, InterOpThreads: 1}}}}
	if explore {
		cfg.GAE = &envrunner.GAE{Gamma: 0.99, Lambda: 0.95}
	} else {
		cfg.NoSamples = true
	}
	r, err := envrunner.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// runnerSteps steps r k times, taking (and discarding) every complete batch into dst.
func runnerSteps(tb testing.TB, r *envrunner.Runner, k int, dst *envrunner.MultiAgentBatch) {
	for range k {
		if err := r.Step(); err != nil {
			tb.Fatal(err)
		}
		if r.Ready() {
			r.Take(dst)
		}
	}
}

// BenchmarkRunner compares one runner over 256 CartPole-v1 sub-environments with the bundled
// MLP against the floor, interleaving them in rounds of 20 steps so that both see the same
// machine. It reports each one's env steps/s and their ratio ("ratio"): greedy without
// sample collection, and exploring with every column built (logp, dist inputs, values,
// GAE), batches discarded.
func BenchmarkRunner(b *testing.B) {
	if err := inference.Init(); err != nil {
		b.Skipf("ONNX Runtime not available (run `make onnxruntime`): %v", err)
	}
	p, err := models.Bundled("cartpole_mlp")
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"greedy", "explore"} {
		b.Run(fmt.Sprintf("mode=%s/envs=%d", mode, runnerEnvs), func(b *testing.B) {
			f := newFloor(b, p, runnerEnvs)
			defer f.sess.Close()
			r := newRunner(b, p, runnerEnvs, 0, mode == "explore")
			defer r.Close()
			var dst envrunner.MultiAgentBatch
			const round = 20
			for range 30 { // warm up: buffers, pools and bindings reach their size
				f.step(b)
				runnerSteps(b, r, round, &dst)
			}
			var floorT, runT time.Duration
			var floorSteps int
			c0 := r.Counters()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				for range round {
					floorSteps += f.step(b)
				}
				t1 := time.Now()
				runnerSteps(b, r, round, &dst)
				runT += time.Since(t1)
				floorT += t1.Sub(t0)
			}
			b.StopTimer()
			runSteps := r.Counters().EnvSteps - c0.EnvSteps
			fs := float64(floorSteps) / floorT.Seconds()
			rs := float64(runSteps) / runT.Seconds()
			b.ReportMetric(fs, "floor-steps/s")
			b.ReportMetric(rs, "runner-steps/s")
			b.ReportMetric(rs/fs, "ratio")
			b.ReportMetric(r.PerfStats().MeanInferenceMs*1e6/runnerEnvs, "runner-inference-ns/env-step")
			b.ReportMetric(f.runT.Seconds()*1e9/float64(floorSteps), "floor-inference-ns/env-step")
		})
	}
}

// BenchmarkRunnerAllocs measures the runner alone (exploring, all columns, batches
// discarded) for its allocations per env step.
func BenchmarkRunnerAllocs(b *testing.B) {
	if err := inference.Init(); err != nil {
		b.Skipf("ONNX Runtime not available (run `make onnxruntime`): %v", err)
	}
	p, err := models.Bundled("cartpole_mlp")
	if err != nil {
		b.Fatal(err)
	}
	r := newRunner(b, p, runnerEnvs, 0, true)
	defer r.Close()
	var dst envrunner.MultiAgentBatch
	runnerSteps(b, r, 1000, &dst)
	c0 := r.Counters()
	b.ReportAllocs()
	b.ResetTimer()
	runnerSteps(b, r, b.N, &dst)
	b.StopTimer()
	steps := r.Counters().EnvSteps - c0.EnvSteps
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(steps), "ns/env-step")
}

// BenchmarkRunnerWorkers runs 1 and 2 runners of 256 sub-environments each, every runner on
// its own goroutine (envrunner.Group, greedy, no samples), and reports the total env
// steps/s. On a machine with 2 free cores, workers=2 should be close to twice workers=1.
func BenchmarkRunnerWorkers(b *testing.B) {
	if err := inference.Init(); err != nil {
		b.Skipf("ONNX Runtime not available (run `make onnxruntime`): %v", err)
	}
	p, err := models.Bundled("cartpole_mlp")
	if err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			runners := make([]*envrunner.Runner, workers)
			for w := range workers {
				runners[w] = newRunner(b, p, runnerEnvs, w, false)
				runnerSteps(b, runners[w], 50, nil)
			}
			g := envrunner.NewGroup(runners)
			defer g.Close()
			steps := int64(b.N) * 20
			for _, r := range runners {
				r.SetLimits(r.Counters().EnvSteps+steps*runnerEnvs, 0)
			}
			c0 := g.Counters()
			b.ResetTimer()
			if err := g.Run(context.Background(), envrunner.GroupOptions{}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			total := g.Counters().EnvSteps - c0.EnvSteps
			b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "env-steps/s")
		})
	}
}
