package envrunner

import (
	"math"
	"sync/atomic"
)

// Counters are a runner's running totals, under RLlib's new API stack names in JSON (see
// NumEnvStepsSampledLifetime).
type Counters struct {
	EnvSteps   int64 `json:"num_env_steps_sampled_lifetime"`
	AgentSteps int64 `json:"num_agent_steps_sampled_lifetime"`
	// Episodes counts the episodes that ended; FaultyEpisodes those dropped because their
	// sub-environment failed.
	Episodes       int64 `json:"num_episodes_lifetime"`
	FaultyEpisodes int64 `json:"num_env_step_failures"`
	// Steps counts the runner's steps (poll, act, send).
	Steps int64 `json:"steps"`
	// MetricsDropped counts the episodes whose metrics were dropped, the oldest first, because
	// Metrics was not called before Config.MaxMetrics more had ended.
	MetricsDropped int64 `json:"metrics_dropped,omitempty"`
}

// Counters returns the runner's totals.
func (r *Runner) Counters() Counters {
	r.met.mu.Lock()
	dropped := r.met.dropped
	r.met.mu.Unlock()
	return Counters{EnvSteps: r.count.envSteps, AgentSteps: r.count.agentSteps, Episodes: r.count.episodes,
		FaultyEpisodes: r.count.faulty, Steps: r.perf.iters, MetricsDropped: dropped}
}

// Metrics appends the metrics of the episodes that ended since the last call to dst and
// returns it (RLlib's get_metrics). The runner keeps them until then, so a long run calls it
// now and then; unlike the runner's other methods it may be called from any goroutine, also
// while another steps the runner.
func (r *Runner) Metrics(dst []RolloutMetrics) []RolloutMetrics {
	r.met.mu.Lock()
	defer r.met.mu.Unlock()
	dst = append(dst, r.met.list[r.met.at:]...)
	dst = append(dst, r.met.list[:r.met.at]...)
	clear(r.met.list)
	r.met.list, r.met.at = r.met.list[:0], 0
	return dst
}

// DefaultMaxMetrics is Config.MaxMetrics' default: about 7 MB of metrics.
const DefaultMaxMetrics = 100_000

// PerfStats returns the mean step phase times (or their moving averages).
func (r *Runner) PerfStats() PerfStats { return r.perf.get() }

// Worker returns the runner's index.
func (r *Runner) Worker() int { return r.cfg.Worker }

// Env returns the runner's environment.
func (r *Runner) Env() any { return r.env }

// Progress is a snapshot of a runner's totals that any goroutine may read while the runner
// steps.
type Progress struct {
	EnvSteps, AgentSteps, Episodes int64
	// ReturnSum is the sum of the returns of the finished episodes.
	ReturnSum float64
}

// progress publishes the runner's totals after every step with atomic stores (no lock).
type progress struct {
	envSteps, agentSteps, episodes atomic.Int64
	returnBits                     atomic.Uint64
	returnSum                      float64 // owned by the runner
}

func (p *progress) update(r *Runner) {
	p.envSteps.Store(r.count.envSteps)
	p.agentSteps.Store(r.count.agentSteps)
	p.episodes.Store(r.count.episodes)
	p.returnBits.Store(math.Float64bits(p.returnSum))
}

// Progress returns the totals as of the runner's last step. It is safe to call from any
// goroutine.
func (r *Runner) Progress() Progress {
	p := &r.progress
	return Progress{EnvSteps: p.envSteps.Load(), AgentSteps: p.agentSteps.Load(), Episodes: p.episodes.Load(),
		ReturnSum: math.Float64frombits(p.returnBits.Load())}
}

// Done reports whether the run reached Config.MaxEnvSteps or Config.MaxEpisodes.
func (r *Runner) Done() bool {
	if r.cfg.MaxEnvSteps > 0 && r.count.envSteps >= r.cfg.MaxEnvSteps {
		return true
	}
	return r.cfg.MaxEpisodes > 0 && r.count.episodes >= r.cfg.MaxEpisodes
}

// SetLimits changes Config.MaxEnvSteps and Config.MaxEpisodes (0: no limit), for a runner
// that is not stepping.
func (r *Runner) SetLimits(maxEnvSteps, maxEpisodes int64) {
	r.cfg.MaxEnvSteps, r.cfg.MaxEpisodes = maxEnvSteps, maxEpisodes
}
