package benchmarks

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/env/classic"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/internal/floor"
	"github.com/onnxrl/sampler/models"
)

const runnerEnvs = 256

// newFloor is the bare loop the runner is measured against (internal/floor): plain Go
// CartPoles, one ONNX Runtime session bound once, argmax, no bookkeeping.
func newFloor(tb testing.TB, p *models.Policy, n int) *floor.Floor {
	f, err := floor.New("cartpole_mlp", p, n)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// floorStep runs one batched step of every env of f; it returns the env steps taken.
func floorStep(tb testing.TB, f *floor.Floor) int {
	k, err := f.Step()
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// floorRound takes n floor steps, adds their wall and CPU time to *t and *cpu, and returns
// the env steps taken.
func floorRound(tb testing.TB, f *floor.Floor, n int, t, cpu *time.Duration) int {
	t0, c0 := time.Now(), cpuTime()
	steps := 0
	for range n {
		steps += floorStep(tb, f)
	}
	*t += time.Since(t0)
	*cpu += cpuTime() - c0
	return steps
}

// reportVsFloor reports the env steps/s of the floor and of what is measured against it
// (NAME-steps/s), "ratio" (its env steps/s over the floor's: above 1 = faster than the floor)
// and "cpu-ratio" (the same with CPU time).
func reportVsFloor(b *testing.B, name string, steps, floorSteps int64, t, floorT, cpu, floorCPU time.Duration) {
	fs := float64(floorSteps) / floorT.Seconds()
	rs := float64(steps) / t.Seconds()
	b.ReportMetric(fs, "floor-steps/s")
	b.ReportMetric(rs, name+"-steps/s")
	b.ReportMetric(rs/fs, "ratio")
	b.ReportMetric((float64(steps)/cpu.Seconds())/(float64(floorSteps)/floorCPU.Seconds()), "cpu-ratio")
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
	return newRunnerOn(tb, p, n, worker, explore, "")
}

// newRunnerOn is newRunner with the policy's session on device ("" or "cpu": the CPU provider).
func newRunnerOn(tb testing.TB, p *models.Policy, n, worker int, explore bool, device string) *envrunner.Runner {
	cfg := envrunner.Config{Env: cartpoleEnv(tb, n, worker*n), NumEnvs: n, Seed: 1, Worker: worker,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: {Policy: p,
			Action:  connectors.ActionConfig{Explore: explore},
			Session: inference.Options{Device: device, IntraOpThreads: 1, InterOpThreads: 1}}}}
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
// GAE), batches discarded. "cpu-ratio" is the ratio of CPU times (see cpuTime). The
// goroutine that runs both is locked to its thread, as envrunner.Group and Runner.Sample
// lock a runner's: the floor and the runner are equally spared the scheduler's moves to
// another thread (and core) when it preempts a goroutine that runs for 10 ms.
func BenchmarkRunner(b *testing.B) {
	p := cartpoleMLP(b)
	for _, mode := range []string{"greedy", "explore"} {
		b.Run(fmt.Sprintf("mode=%s/envs=%d", mode, runnerEnvs), func(b *testing.B) {
			runtime.LockOSThread() // see the doc
			defer runtime.UnlockOSThread()
			f := newFloor(b, p, runnerEnvs)
			defer f.Close()
			r := newRunner(b, p, runnerEnvs, 0, mode == "explore")
			defer r.Close()
			var dst envrunner.MultiAgentBatch
			const round = 20
			for range 30 { // warm up: buffers, pools and bindings reach their size
				floorStep(b, f)
				runnerSteps(b, r, round, &dst)
			}
			var floorT, runT, floorCPU, runCPU time.Duration
			var floorSteps int
			c0 := r.Counters()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				floorSteps += floorRound(b, f, round, &floorT, &floorCPU)
				t1, c1 := time.Now(), cpuTime()
				runnerSteps(b, r, round, &dst)
				runT += time.Since(t1)
				runCPU += cpuTime() - c1
			}
			b.StopTimer()
			runSteps := r.Counters().EnvSteps - c0.EnvSteps
			reportVsFloor(b, "runner", runSteps, int64(floorSteps), runT, floorT, runCPU, floorCPU)
			b.ReportMetric(r.PerfStats().MeanInferenceMs*1e6/runnerEnvs, "runner-inference-ns/env-step")
			b.ReportMetric(f.InferenceTime.Seconds()*1e9/float64(floorSteps), "floor-inference-ns/env-step")
		})
	}
}

// BenchmarkRunnerNativeVsCPU runs the whole sampler twice over 256 CartPole-v1
// sub-environments with the bundled MLP, one runner's policy on the CPU provider and the
// other's on the project's provider (device "native"), one intra-op thread each, interleaved
// in rounds of 20 steps, and reports both env steps/s and "native/cpu" = native steps/s
// divided by cpu steps/s (above 1 = native faster), greedy and exploring with every column.
func BenchmarkRunnerNativeVsCPU(b *testing.B) {
	if err := inference.EnsureNative(); err != nil {
		b.Skipf("the native provider is not built (make native): %v", err)
	}
	p := cartpoleMLP(b)
	for _, mode := range []string{"greedy", "explore"} {
		b.Run(fmt.Sprintf("mode=%s/envs=%d", mode, runnerEnvs), func(b *testing.B) {
			runtime.LockOSThread() // as BenchmarkRunner
			defer runtime.UnlockOSThread()
			cpu := newRunnerOn(b, p, runnerEnvs, 0, mode == "explore", "cpu")
			defer cpu.Close()
			nat := newRunnerOn(b, p, runnerEnvs, 0, mode == "explore", "native")
			defer nat.Close()
			var dst envrunner.MultiAgentBatch
			const round = 20
			for range 30 {
				runnerSteps(b, cpu, round, &dst)
				runnerSteps(b, nat, round, &dst)
			}
			var cpuT, natT time.Duration
			c0, n0 := cpu.Counters(), nat.Counters()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				runnerSteps(b, cpu, round, &dst)
				t1 := time.Now()
				runnerSteps(b, nat, round, &dst)
				natT += time.Since(t1)
				cpuT += t1.Sub(t0)
			}
			b.StopTimer()
			cs := float64(cpu.Counters().EnvSteps-c0.EnvSteps) / cpuT.Seconds()
			ns := float64(nat.Counters().EnvSteps-n0.EnvSteps) / natT.Seconds()
			b.ReportMetric(cs, "cpu-steps/s")
			b.ReportMetric(ns, "native-steps/s")
			b.ReportMetric(ns/cs, "native/cpu")
		})
	}
}

// BenchmarkRunnerAllocs measures the runner alone (exploring, all columns, batches
// discarded) for its allocations per env step.
func BenchmarkRunnerAllocs(b *testing.B) {
	p := cartpoleMLP(b)
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
	p := cartpoleMLP(b)
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

// newSampleRunRunner builds the runner `sample run` builds for
// `--env CartPole-v1 --num-envs 256 --steps N` (one worker, fragment 200, truncate_episodes,
// env steps, normalize_actions, one intra-op thread, every episode's metrics kept until
// taken), greedy (--explore=false) or exploring with GAE
// (--gae): a VectorEnv of registered CartPole-v1 environments through NewVectorBaseEnv.
func newSampleRunRunner(tb testing.TB, p *models.Policy, n int, explore bool) *envrunner.Runner {
	v, err := env.NewVectorEnv(func(int) (env.Env, error) {
		raw, err := env.Make("CartPole-v1", nil)
		if err != nil {
			return nil, err
		}
		return raw.Env(), nil
	}, n)
	if err != nil {
		tb.Fatal(err)
	}
	be, err := env.NewVectorBaseEnv(v, env.BaseEnvOptions{Seed: env.WithSeed(0)})
	if err != nil {
		tb.Fatal(err)
	}
	cfg := envrunner.Config{Env: be, NumEnvs: n, Seed: 0, Worker: 0,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: {Policy: p,
			ObservationSpace: p.Spec.ObservationSpace, ActionSpace: p.Spec.ActionSpace,
			Action:  connectors.ActionConfig{Explore: explore, NormalizeActions: true},
			Session: inference.Options{Device: "cpu", IntraOpThreads: 1, InterOpThreads: 1}}},
		FragmentLength: 200, CountStepsBy: envrunner.EnvSteps, BatchMode: envrunner.TruncateEpisodes, MaxMetrics: -1}
	if explore {
		cfg.GAE = &envrunner.GAE{Gamma: 0.99, Lambda: 0.95}
	}
	r, err := envrunner.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// BenchmarkSampleRun runs what `sample run --env CartPole-v1 --num-envs N` runs without an
// output file, at N = 256 and 4096 (a Group over the runner, a sink that takes the episodes'
// metrics, counts each batch and releases it, so every batch is built and handed over)
// against BenchmarkRunner's floor, interleaved in rounds of two fragments (400 steps of every sub-environment) so that
// both see the same machine (and "cpu-ratio", the same ratio of CPU times, steadier on a
// machine shared with other work: see cpuTime). Each round is one Group.Run up to the
// round's env steps (the group's batches are reused from round to round, as from batch to
// batch in one long run; each round ends with the run's last, empty, partial batch). Modes:
// greedy (--explore=false) and explore with GAE (--gae: every column). It reports both
// steps/s and their ratio; over the timed rounds, "take-ns/env-step", the runner's time in
// Take (every row moved from the agents' trajectories into the batch columns, GAE: in
// truncate_episodes mode all of it happens there) per env step, the share of the gap to
// the floor that building the batches costs at the fragment's end; and the runner's and the
// floor's inference time per env step (the same model, batch and session options: they
// should match).
func BenchmarkSampleRun(b *testing.B) {
	p := cartpoleMLP(b)
	for _, mode := range []string{"greedy", "explore"} {
		for _, envs := range []int{runnerEnvs, 4096} {
			b.Run(fmt.Sprintf("mode=%s/envs=%d", mode, envs), func(b *testing.B) {
				benchmarkSampleRun(b, p, mode, envs)
			})
		}
	}
}

func benchmarkSampleRun(b *testing.B, p *models.Policy, mode string, envs int) {
	runtime.LockOSThread() // see BenchmarkRunner's doc
	defer runtime.UnlockOSThread()
	f := newFloor(b, p, envs)
	defer f.Close()
	r := newSampleRunRunner(b, p, envs, mode == "explore")
	defer r.Close()
	const round = 400 // two fragments: both batches of the group's pool go round
	var batches, rows int64
	var steps int64
	g := envrunner.NewGroup([]*envrunner.Runner{r}) // r is closed above
	count := g.CountAndRelease(&batches, &rows)     // sample run's sink without --out,
	var ms []envrunner.RolloutMetrics               // after it takes the episodes' metrics
	var episodes int
	sink := func(mb *envrunner.MultiAgentBatch) error {
		ms = g.Metrics(ms[:0])
		episodes += len(ms)
		return count(mb)
	}
	runRound := func() (time.Duration, time.Duration) {
		steps += round * int64(envs)
		r.SetLimits(steps, 0)
		t, c := time.Now(), cpuTime()
		err := g.Run(context.Background(), envrunner.GroupOptions{Sink: sink})
		d, dc := time.Since(t), cpuTime()-c
		if err != nil {
			b.Fatal(err)
		}
		return d, dc
	}
	for range 3 { // warm up: buffers, pools and bindings reach their size
		for range round {
			floorStep(b, f)
		}
		runRound()
	}
	var floorT, runT, floorCPU, runCPU time.Duration
	var floorSteps int
	c0, p0 := r.Counters(), r.PerfStats()
	f.InferenceTime = 0
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		floorSteps += floorRound(b, f, round, &floorT, &floorCPU)
		d, dc := runRound()
		runT += d
		runCPU += dc
	}
	b.StopTimer()
	runSteps := r.Counters().EnvSteps - c0.EnvSteps
	reportVsFloor(b, "run", runSteps, int64(floorSteps), runT, floorT, runCPU, floorCPU)
	// The runner's phases over the timed rounds: PerfStats are means over its steps.
	c1, p1 := r.Counters(), r.PerfStats()
	phase := func(ms func(envrunner.PerfStats) float64) float64 {
		total := ms(p1)*float64(c1.Steps) - ms(p0)*float64(c0.Steps) // ms
		return total * 1e6 / float64(runSteps)
	}
	b.ReportMetric(phase(func(p envrunner.PerfStats) float64 { return p.MeanSampleOutputMs }), "take-ns/env-step")
	b.ReportMetric(phase(func(p envrunner.PerfStats) float64 { return p.MeanInferenceMs }), "run-inference-ns/env-step")
	b.ReportMetric(f.InferenceTime.Seconds()*1e9/float64(floorSteps), "floor-inference-ns/env-step")
	if rows == 0 || episodes == 0 {
		b.Fatalf("%d rows built, %d episodes' metrics taken", rows, episodes)
	}
}

// cartpoleMLP is the bundled CartPole MLP; the benchmark skips without ONNX Runtime.
func cartpoleMLP(b *testing.B) *models.Policy {
	b.Helper()
	if err := inference.Init(); err != nil {
		b.Skipf("ONNX Runtime not available (run `make onnxruntime`): %v", err)
	}
	p, err := models.Bundled("cartpole_mlp")
	if err != nil {
		b.Fatal(err)
	}
	return p
}
