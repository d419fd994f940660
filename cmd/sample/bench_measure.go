package main

import (
	"bufio"
	"context"
	"fmt"
	"github.com/onnxrl/sampler/envrunner/runspec"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/internal/bench"
)

// runSpec is the sample run settings of one configuration: no step limit (the bench decides
// when to stop), sample batches built as sample run builds them.
func (f *benchFlags) runSpec(c bench.Config) runspec.Spec {
	s := runspec.DefaultSpec()
	s.Env, s.Model, s.Device, s.NumEnvs, s.Workers = c.Env, c.Model, c.Device, c.NumEnvs, c.Workers
	s.Threads, s.FragmentLength, s.Seed, s.Explore = f.threads, f.fragment, f.seed, f.explore
	return s
}

// measure builds one configuration, steps it for the warm-up, then runs the measured
// repeats, each followed by the other sampler's repeat when there is one. It returns the
// runs, and why the other sampler declined the configuration ("" if it did not).
func (f *benchFlags) measure(ctx context.Context, c bench.Config, vs *vsSampler) ([]bench.Run, string, error) {
	s, err := buildRun(f.runSpec(c), 0)
	if err != nil {
		return nil, "", err
	}
	defer s.Close()
	m := newMeter(s.Group.Runners())
	// The warm-up lasts at least until every runner took two batches: a runner alternates
	// between two batch buffers, and the first fill of each grows it (slow for large
	// batches; steady state reuses them).
	if _, err := m.step(ctx, f.warmup, 2); err != nil {
		return nil, "", err
	}
	var runs []bench.Run
	vsWhy := ""
	for rep := 1; rep <= f.repeats && ctx.Err() == nil; rep++ {
		r, err := m.step(ctx, f.duration, 0)
		if err != nil {
			return runs, vsWhy, err
		}
		r.Config, r.Sampler, r.Repeat = c, bench.Ours, rep
		runs = append(runs, r)
		if vs == nil || vsWhy != "" || ctx.Err() != nil {
			continue
		}
		vr, why, err := vs.run(ctx, c)
		if err != nil {
			return runs, vsWhy, err
		}
		if why != "" {
			vsWhy = why
			continue
		}
		vr.Config, vr.Sampler, vr.Repeat = c, bench.Vs, rep
		runs = append(runs, vr)
	}
	return runs, vsWhy, nil
}

// meter steps a configuration's runners, each on its own goroutine as sample run does,
// and reads what a stretch of steps did from the runners' counters and perf stats.
type meter struct {
	runners []*envrunner.Runner
	batches []envrunner.MultiAgentBatch
}

func newMeter(runners []*envrunner.Runner) *meter {
	return &meter{runners: runners, batches: make([]envrunner.MultiAgentBatch, len(runners))}
}

// totals are one runner's running sums: steps, env steps, and seconds by phase.
type totals struct {
	steps, envSteps int64
	phases          bench.Phases
}

func readTotals(r *envrunner.Runner) totals {
	c, p := r.Counters(), r.PerfStats()
	n := float64(c.Steps) / 1000 // mean ms per step -> seconds in all
	return totals{steps: c.Steps, envSteps: c.EnvSteps, phases: bench.Phases{EnvWait: p.MeanEnvWaitMs * n,
		ObsProcessing: p.MeanRawObsProcessingMs * n, Inference: p.MeanInferenceMs * n,
		ActionProcessing: p.MeanActionProcessingMs * n, Output: p.MeanSampleOutputMs * n}}
}

// step runs every runner for d, and until it took minTakes batches, (or until ctx is done)
// and returns what they did: env steps per second of wall time, and the mean runner step by
// phase ("other" is the wall time the phases do not account for).
func (m *meter) step(ctx context.Context, d time.Duration, minTakes int) (bench.Run, error) {
	before := make([]totals, len(m.runners))
	for i, r := range m.runners {
		before[i] = readTotals(r)
	}
	var stop, abort atomic.Bool
	timer := time.AfterFunc(d, func() { stop.Store(true) })
	defer timer.Stop()
	cancel := context.AfterFunc(ctx, func() { abort.Store(true) })
	defer cancel()
	errs := make([]error, len(m.runners))
	var wg sync.WaitGroup
	start := time.Now()
	for i, r := range m.runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := &m.batches[i]
			takes := 0
			for !abort.Load() && !(stop.Load() && takes >= minTakes) {
				if err := r.Step(); err != nil {
					errs[i] = fmt.Errorf("worker %d: %w", i, err)
					abort.Store(true)
					return
				}
				if r.Ready() {
					r.Take(b) // b's buffers are reused: no allocation in steady state
					takes++
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	for _, err := range errs {
		if err != nil {
			return bench.Run{}, err
		}
	}
	var run bench.Run
	var sum bench.Phases
	for i, r := range m.runners {
		a, b := readTotals(r), before[i]
		run.RunnerSteps += a.steps - b.steps
		run.EnvSteps += a.envSteps - b.envSteps
		sum.EnvWait += a.phases.EnvWait - b.phases.EnvWait
		sum.ObsProcessing += a.phases.ObsProcessing - b.phases.ObsProcessing
		sum.Inference += a.phases.Inference - b.phases.Inference
		sum.ActionProcessing += a.phases.ActionProcessing - b.phases.ActionProcessing
		sum.Output += a.phases.Output - b.phases.Output
	}
	run.Seconds = elapsed
	if elapsed > 0 {
		run.StepsPerSec = float64(run.EnvSteps) / elapsed
	}
	if n := float64(run.RunnerSteps); n > 0 {
		p := bench.Phases{EnvWait: sum.EnvWait / n, ObsProcessing: sum.ObsProcessing / n, Inference: sum.Inference / n,
			ActionProcessing: sum.ActionProcessing / n, Output: sum.Output / n}
		p.Other = max(0, elapsed*float64(len(m.runners))/n-p.Total())
		run.Phases = p
	}
	return run, nil
}

// machine describes this computer for the report: CPU model, cores, OS and architecture.
func machine() string {
	cpu := "unknown CPU"
	if fh, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
		fh.Close()
	}
	return fmt.Sprintf("%s, %d cores available (GOMAXPROCS %d), %s/%s, %s", cpu, runtime.NumCPU(), runtime.GOMAXPROCS(0),
		runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// versions names the sampler's and the runtime's versions for the report.
func versions() string {
	v := "sample (devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = "sample " + bi.Main.Version
	}
	if inference.Init() == nil {
		v += ", onnxruntime " + inference.Version()
	}
	return v
}
