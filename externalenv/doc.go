// Package externalenv is RLlib's ExternalEnv: environments with inverted control, where the
// simulator drives itself and asks the sampler for actions.
//
// # Usage
//
// The simulator's loop runs on goroutines of its own (Start runs one) and calls the API; an
// envrunner.Runner drives the ExternalEnv as an env.BaseEnv with NumEnvs set to
// MaxConcurrentEpisodes and answers all pending GetAction calls of a step with one batched
// inference:
//
//	e, _ := externalenv.New(externalenv.Options{ObservationSpace: obsSpace, ActionSpace: actSpace})
//	e.Start(ctx, func(ctx context.Context, e *externalenv.ExternalEnv) error {
//		id, _ := e.StartEpisode("", true)
//		act, err := e.GetAction(ctx, id, obs) // blocks until the sampler answers
//		...                                   // step the simulator with act
//		e.LogReturns(id, reward, nil)         // summed until the next observation
//		e.LogAction(id, obs, ownAction)       // the simulator acted itself: recorded as is
//		return e.EndEpisode(id, finalObs)
//	})
//	r, _ := envrunner.New(envrunner.Config{Env: e, NumEnvs: e.NumEnvs(), ...})
//
// # What Poll reports
//
// Each running episode occupies a sub-environment 0..MaxConcurrentEpisodes-1 from its first
// reported observation until its end has been polled (the slot is reused from the next Poll
// on). Poll reports one env.AgentObs (agent env.DefaultAgentID) per pending observation, at
// most one per episode and step: the first observation of an episode comes with
// EnvStatus{Reset: true, TrainingDisabled: !trainingEnabled}; Reward is the sum of the
// LogReturns since the episode's previous observation; EndEpisode's observation is
// Terminated (EnvStatus.Terminated too). A LogAction observation is reported like a GetAction
// one (the sampler's action for it is dropped), and the logged action comes as
// OffPolicyAction with the episode's next observation, which is where the runner records a
// transition's action. TryReset is a no-op returning async=true: the next StartEpisode brings
// the next episode.
//
// # Errors and lifetimes
//
// Calls with unknown, running or completed episode ids fail with ErrEpisodeNotFound,
// ErrEpisodeExists and ErrEpisodeDone (the last 10000 completed ids are remembered);
// StartEpisode beyond MaxConcurrentEpisodes fails with ErrTooManyEpisodes. Observations and
// actions outside their spaces are refused (ErrBadObservation, ErrBadAction) before anything
// is recorded. GetAction gives up with the context's error or ErrTimeout; if its observation
// was not polled yet it is taken back (its reward stays with the episode). When the run loop
// returns or panics, Poll returns a *RunLoopError once the observations reported before
// have been polled; Stop makes every blocked and later call
// return ErrStopped. Observations are copied when they are reported; the Obs slices Poll
// reports stay valid until the next Poll. Actions are copied for GetAction's caller.
package externalenv
