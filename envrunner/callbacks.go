package envrunner

// Callbacks are called by a runner on its goroutine (RLlib's RLlibCallback for the env
// runner). Embed BaseCallbacks to implement only some of them. An Episode is reused once it
// ends; do not keep it after OnEpisodeEnd.
type Callbacks interface {
	// OnEpisodeCreated is called when the runner makes the episode object for a sub-env,
	// before OnEpisodeStart.
	OnEpisodeCreated(r *Runner, ep *Episode)
	// OnEpisodeStart is called when the first observations of the episode arrive, before
	// any of its agents acts.
	OnEpisodeStart(r *Runner, ep *Episode)
	// OnEpisodeStep is called once per environment step of the episode, after the step's
	// observations and rewards were taken in and before the next actions are computed.
	OnEpisodeStep(r *Runner, ep *Episode)
	// OnEpisodeEnd is called when the episode ended (not for faulty episodes), before its
	// metrics are recorded: CustomMetrics set here are reported.
	OnEpisodeEnd(r *Runner, ep *Episode)
	// OnSampleResult is called with every batch Take or Sample returns.
	OnSampleResult(r *Runner, b *MultiAgentBatch)
}

// BaseCallbacks does nothing; embed it to override some callbacks only.
type BaseCallbacks struct{}

func (BaseCallbacks) OnEpisodeCreated(*Runner, *Episode)       {}
func (BaseCallbacks) OnEpisodeStart(*Runner, *Episode)         {}
func (BaseCallbacks) OnEpisodeStep(*Runner, *Episode)          {}
func (BaseCallbacks) OnEpisodeEnd(*Runner, *Episode)           {}
func (BaseCallbacks) OnSampleResult(*Runner, *MultiAgentBatch) {}
