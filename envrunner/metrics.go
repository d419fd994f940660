package envrunner

// Counters are a runner's running totals.
type Counters struct {
	EnvSteps   int64 `json:"env_steps"`
	AgentSteps int64 `json:"agent_steps"`
	// Episodes counts the episodes that ended; FaultyEpisodes those dropped because their
	// sub-environment failed.
	Episodes       int64 `json:"episodes"`
	FaultyEpisodes int64 `json:"num_faulty_episodes"`
	// Steps counts the runner's steps (poll, act, send).
	Steps int64 `json:"steps"`
}

// Counters returns the runner's totals.
func (r *Runner) Counters() Counters {
	return Counters{EnvSteps: r.totalEnvSteps, AgentSteps: r.totalAgentSteps, Episodes: r.episodesDone,
		FaultyEpisodes: r.faulty, Steps: r.perf.iters}
}

// Metrics appends the metrics of the episodes that ended since the last call to dst and
// returns it (RLlib's get_metrics).
func (r *Runner) Metrics(dst []RolloutMetrics) []RolloutMetrics {
	dst = append(dst, r.metrics...)
	clear(r.metrics)
	r.metrics = r.metrics[:0]
	return dst
}

// PerfStats returns the mean step phase times (or their moving averages).
func (r *Runner) PerfStats() PerfStats { return r.perf.get() }

// Worker returns the runner's index.
func (r *Runner) Worker() int { return r.cfg.Worker }

// Env returns the runner's environment.
func (r *Runner) Env() any { return r.env }
