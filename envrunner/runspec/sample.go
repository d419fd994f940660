package runspec

import (
	"context"
	"reflect"
	"time"

	"github.com/onnxrl/sampler/envrunner"
)

// DefaultSpec returns `sample run`'s defaults: CartPole-v1 with its bundled policy, one
// sub-environment and one worker, exploring with normalized actions, fragments of 200 env
// steps in truncate_episodes mode, GAE off (gamma 0.99, lambda 0.95 when turned on), the CPU
// with one intra-op thread. It sets no end: give MaxEnvSteps or MaxEpisodes.
func DefaultSpec() Spec {
	return Spec{Env: "CartPole-v1", NumEnvs: 1, Workers: 1, Explore: true, NormalizeActions: true,
		FragmentLength: 200, BatchMode: envrunner.TruncateEpisodes, CountStepsBy: envrunner.EnvSteps,
		Gamma: 0.99, Lambda: 0.95, Device: "cpu", Threads: 1}
}

// Result is a finished run: its sample batches and its metrics.
type Result struct {
	// Batches are the run's batches in the order `sample run` writes them (round-robin over
	// the workers, worker 0's first; batches without rows left out). Each is a copy the
	// caller owns; only the Infos maps, the Model and the ActionSpace are shared with the
	// runners.
	Batches []*envrunner.MultiAgentBatch
	// Episodes are the metrics of the episodes that ended, faulty ones left out (they are
	// counted in Counters.FaultyEpisodes); with MaxEpisodes exactly the first MaxEpisodes.
	Episodes []envrunner.RolloutMetrics
	Counters envrunner.Counters  // summed over the workers
	Perf     envrunner.PerfStats // the mean times of a step's phases
	Elapsed  time.Duration       // the stepping, without the build
}

// EpisodeStats are the summary figures of `sample run` over a run's episodes.
type EpisodeStats struct {
	Episodes                         int
	ReturnMean, ReturnMin, ReturnMax float64
	LenMean                          float64
}

// EpisodeStats summarizes r.Episodes (zeros without an episode), as sample run's summary
// does (envrunner.EpisodeTotals).
func (r *Result) EpisodeStats() EpisodeStats {
	var t envrunner.EpisodeTotals
	t.Add(r.Episodes)
	s := EpisodeStats{Episodes: int(t.N)}
	if t.N > 0 {
		s.ReturnMean, s.LenMean = t.Means()
		s.ReturnMin, s.ReturnMax = t.ReturnMin, t.ReturnMax
	}
	return s
}

// StepsPerSec is the run's environment steps per second of Elapsed.
func (r *Result) StepsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Counters.EnvSteps) / r.Elapsed.Seconds()
}

// Sample builds the run of s, steps it to its end and returns its batches and metrics: what
// `sample run --steps N` or `--episodes N` does, as a function, without the output file. s
// must end: MaxEnvSteps or MaxEpisodes > 0 (a *SpecError otherwise). Every batch is kept in
// memory; a run that streams its batches builds with Build and gives Group.Run a sink that
// releases them (see the package doc). When ctx is cancelled Sample returns what was sampled
// until then with ctx's error.
//
//	s := runspec.DefaultSpec()
//	s.NumEnvs, s.MaxEnvSteps = 8, 1000
//	res, err := runspec.Sample(ctx, s)
func Sample(ctx context.Context, s Spec) (*Result, error) {
	if s.MaxEnvSteps <= 0 && s.MaxEpisodes <= 0 {
		return nil, specErrorf("--steps or --episodes: Sample needs a run that ends")
	}
	run, err := Build(s)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	res := &Result{}
	g := run.Group
	var ms []envrunner.RolloutMetrics
	take := func() {
		ms = g.Metrics(ms[:0])
		for _, m := range ms {
			if !m.Faulty {
				res.Episodes = append(res.Episodes, m)
			}
		}
		clear(ms)
	}
	sink := func(b *envrunner.MultiAgentBatch) error {
		if b.Rows() > 0 {
			res.Batches = append(res.Batches, cloneBatch(b))
		}
		if s.MaxEpisodes == 0 {
			take() // with every batch, as sample run does: the runners hold a fragment's worth
		}
		g.Release(b)
		return nil
	}
	start := time.Now()
	runErr := g.Run(ctx, envrunner.GroupOptions{Sink: sink})
	res.Elapsed = time.Since(start)
	take()
	if s.MaxEpisodes > 0 {
		// The runners stop starting episodes once their share started; exactly the first
		// MaxEpisodes count, as in sample run's summary.
		res.Episodes = res.Episodes[:min(int64(len(res.Episodes)), s.MaxEpisodes)]
	}
	res.Counters, res.Perf = g.Counters(), g.PerfStats()
	if runErr == nil {
		runErr = ctx.Err()
	}
	return res, runErr
}

// cloneBatch copies b into new storage: every slice of every policy batch, whatever columns
// SampleBatch has (reflection, so that a column added later is copied too).
func cloneBatch(b *envrunner.MultiAgentBatch) *envrunner.MultiAgentBatch {
	c := &envrunner.MultiAgentBatch{EnvSteps: b.EnvSteps, AgentSteps: b.AgentSteps,
		PolicyBatches: make(map[envrunner.PolicyID]*envrunner.SampleBatch, len(b.PolicyBatches))}
	for id, pb := range b.PolicyBatches {
		cp := *pb
		v := reflect.ValueOf(&cp).Elem()
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() && f.Kind() == reflect.Slice {
				f.Set(cloneSlice(f))
			}
		}
		c.PolicyBatches[id] = &cp
	}
	return c
}

// cloneSlice copies s (its length, as a new array), and slices within it likewise.
func cloneSlice(s reflect.Value) reflect.Value {
	if s.IsNil() {
		return s
	}
	c := reflect.MakeSlice(s.Type(), s.Len(), s.Len())
	reflect.Copy(c, s)
	if s.Type().Elem().Kind() == reflect.Slice {
		for i := range c.Len() {
			c.Index(i).Set(cloneSlice(c.Index(i)))
		}
	}
	return c
}
