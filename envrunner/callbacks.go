package envrunner

// Callbacks are called by a runner on its goroutine (RLlib's RLlibCallback for the env
// runner). Config.Callbacks is any value: the runner looks once, in New, for the methods
// below (each an interface of its own) and calls those it has, so a value that has
// OnEpisodeEnd only costs the runner nothing on its steps. An Episode is reused once it ends;
// do not keep it after OnEpisodeEnd.
type Callbacks = any

// EpisodeCreatedCallback: OnEpisodeCreated is called when the runner makes the episode
// object for a sub-environment: before it resets the sub-environment for that episode (before
// the first Poll for the first episodes), as RLlib's on_episode_created. The episode has its
// ID, EnvID and Worker; OnEpisodeStart follows with its first observations.
type EpisodeCreatedCallback interface {
	OnEpisodeCreated(r *Runner, ep *Episode)
}

// EpisodeStartCallback: OnEpisodeStart is called when the first observations of the
// episode arrive, before any of its agents acts.
type EpisodeStartCallback interface {
	OnEpisodeStart(r *Runner, ep *Episode)
}

// EpisodeStepCallback: OnEpisodeStep is called once per environment step of the episode,
// after the step's observations and rewards were taken in and before the next actions are
// computed. It takes every row off the runner's fast path: implement it only when needed.
type EpisodeStepCallback interface {
	OnEpisodeStep(r *Runner, ep *Episode)
}

// EpisodeEndCallback: OnEpisodeEnd is called when the episode ended, before its metrics are
// recorded: CustomMetrics set here are reported. A faulty episode (its sub-environment
// failed) comes with Episode.Err set, as RLlib passes the exception to on_episode_end.
type EpisodeEndCallback interface {
	OnEpisodeEnd(r *Runner, ep *Episode)
}

// SampleResultCallback: OnSampleResult is called with every batch Take or Sample returns.
type SampleResultCallback interface {
	OnSampleResult(r *Runner, b *MultiAgentBatch)
}

// callbacks are the methods Config.Callbacks has, found once; nil for those it lacks.
type callbacks struct {
	created EpisodeCreatedCallback
	start   EpisodeStartCallback
	step    EpisodeStepCallback
	end     EpisodeEndCallback
	sample  SampleResultCallback
}

func findCallbacks(v Callbacks) callbacks {
	var c callbacks
	c.created, _ = v.(EpisodeCreatedCallback)
	c.start, _ = v.(EpisodeStartCallback)
	c.step, _ = v.(EpisodeStepCallback)
	c.end, _ = v.(EpisodeEndCallback)
	c.sample, _ = v.(SampleResultCallback)
	return c
}
