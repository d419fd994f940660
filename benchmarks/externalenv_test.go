package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/env/classic"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

const (
	externalEpisodes = 1024
	externalBatch    = 256 // MaxBatch: a quarter of the episodes, so that inference and simulators overlap
)

// cpuTime is the CPU time (user and system) the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cartpoleSim runs CartPole-v1 episodes through the ExternalEnv API until it is stopped.
func cartpoleSim(ctx context.Context, e *externalenv.ExternalEnv, k int) error {
	cp, err := classic.NewCartPole(nil)
	if err != nil {
		return err
	}
	obs := make([]float32, 4)
	for ep := 0; ; ep++ {
		id, err := e.StartEpisode("", true)
		if err != nil {
			return err
		}
		if _, err := cp.Reset(env.WithSeed(uint64(k)<<32|uint64(ep)), obs); err != nil {
			return err
		}
		for {
			act, err := e.GetAction(ctx, id, obs)
			if err != nil {
				return err
			}
			res, err := cp.Step(act, obs)
			if err != nil {
				return err
			}
			if err := e.LogReturns(id, res.Reward, nil); err != nil {
				return err
			}
			if res.Terminated || res.Truncated {
				if err := e.EndEpisode(id, obs); err != nil {
					return err
				}
				break
			}
		}
	}
}

// replaySim runs episodes of replayLen steps through the ExternalEnv API, reporting the
// same CartPole observation every step: the simulator's own cost is nil.
func replaySim(ctx context.Context, e *externalenv.ExternalEnv, k int) error {
	obs := []float32{0.01, -0.02, 0.03, 0.04}
	for {
		id, err := e.StartEpisode("", true)
		if err != nil {
			return err
		}
		for range replayLen {
			if _, err := e.GetAction(ctx, id, obs); err != nil {
				return err
			}
			if err := e.LogReturns(id, 1, nil); err != nil {
				return err
			}
		}
		if err := e.EndEpisodeTruncated(id, obs); err != nil {
			return err
		}
	}
}

const replayLen = 200

// BenchmarkExternalEnv runs 1024 simulator goroutines (one episode each at a time) through
// StartEpisode / GetAction / LogReturns / EndEpisode against one envrunner.Runner with the
// bundled CartPole MLP that answers them, one op per action:
//
//   - sim=cartpole: each goroutine steps a CartPole-v1 of its own; sim=replay: it reports
//     the same observation every step, in episodes of 200 (the simulator costs nothing);
//   - mode=greedy: argmax, no samples (NoSamples); mode=explore: sampled actions and every
//     column built (logp, dist inputs, values, GAE), batches discarded;
//   - batch=256: MaxBatch, a quarter of the episodes, so that the sampler's inference of one
//     batch overlaps the simulators' steps of the others; wait=100µs: MaxWait (dynamic
//     batching), or 0: Poll answers whatever is pending.
//
// It reports "actions/s", "cpu-ns/action" (the process's CPU time per action: on a busy
// machine the figure to compare) and "actions/poll" (the batch sizes Poll made). The
// goroutines carry pprof labels role=runner and role=simulator for -cpuprofile.
func BenchmarkExternalEnv(b *testing.B) {
	p := cartpoleMLP(b)
	for _, sim := range []string{"cartpole", "replay"} {
		for _, mode := range []string{"greedy", "explore"} {
			for _, wait := range []time.Duration{100 * time.Microsecond, 0} {
				name := fmt.Sprintf("sim=%s/mode=%s/episodes=%d/batch=%d/wait=%v", sim, mode, externalEpisodes, externalBatch, wait)
				b.Run(name, func(b *testing.B) { benchExternal(b, p, sim, mode == "explore", externalBatch, wait) })
			}
		}
	}
}

func benchExternal(b *testing.B, p *models.Policy, sim string, explore bool, batch int, wait time.Duration) {
	cp, err := classic.NewCartPole(nil)
	if err != nil {
		b.Fatal(err)
	}
	e, err := externalenv.New(externalenv.Options{ObservationSpace: cp.ObservationSpace(), ActionSpace: cp.ActionSpace(),
		MaxConcurrentEpisodes: externalEpisodes, MaxBatch: batch, MaxWait: wait})
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, externalEpisodes)
	e.Start(context.Background(), func(ctx context.Context, e *externalenv.ExternalEnv) error {
		for k := range externalEpisodes {
			wg.Add(1)
			go pprof.Do(ctx, pprof.Labels("role", "simulator"), func(ctx context.Context) {
				defer wg.Done()
				if sim == "replay" {
					errs[k] = replaySim(ctx, e, k)
				} else {
					errs[k] = cartpoleSim(ctx, e, k)
				}
			})
		}
		wg.Wait()
		return nil
	})
	cfg := envrunner.Config{Env: e, NumEnvs: e.NumEnvs(), Seed: 1,
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
		_ = e.Stop()
		b.Fatal(err)
	}
	var dst envrunner.MultiAgentBatch
	nsteps := 0
	steps := func(n int64) {
		target := r.Counters().AgentSteps + n
		for r.Counters().AgentSteps < target {
			nsteps++
			if err := r.Step(); err != nil {
				b.Fatal(err)
			}
			if r.Ready() {
				r.Take(&dst)
			}
		}
	}
	steps(20 * externalEpisodes) // warm up: every episode running, buffers grown
	c0 := r.Counters()
	nsteps = 0
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	t0 := time.Now()
	pprof.Do(context.Background(), pprof.Labels("role", "runner"), func(context.Context) { steps(int64(b.N)) })
	el := time.Since(t0)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	n := r.Counters().AgentSteps - c0.AgentSteps
	b.ReportMetric(float64(n)/el.Seconds(), "actions/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/action")
	b.ReportMetric(float64(n)/float64(nsteps), "actions/poll")
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
	wg.Wait()
	for _, err := range errs {
		if !errors.Is(err, externalenv.ErrStopped) {
			b.Fatal(err)
		}
	}
}
