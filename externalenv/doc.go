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
// ExternalMultiAgentEnv (NewMultiAgent) is the same with maps keyed by agent id (see
// Multi-agent episodes below). With many simulator goroutines, set MaxWait (dynamic
// batching, e.g. 100µs) and a MaxBatch of a fraction of them: Poll then waits for a batch
// worth one inference while the others step, instead of answering a few at a time.
//
// # What Poll reports
//
// Each running episode occupies a sub-environment 0..MaxConcurrentEpisodes-1 from its first
// reported observation until its end has been polled (the slot is reused from the next Poll
// on). Poll reports one env.AgentObs (agent env.DefaultAgentID) per pending observation, at
// most one per episode and step: the first observation of an episode comes with
// EnvStatus{Reset: true, TrainingDisabled: !trainingEnabled}; Reward is the sum of the
// LogReturns since the episode's previous observation, and Info the last info given to
// LogReturns, which stays until another replaces it (RLlib's cur_info); EndEpisode's
// observation is Terminated (EnvStatus.Terminated too). A LogAction observation is reported
// like a GetAction one, with the logged action as its OffPolicyAction (RLlib's contract: the
// action comes with the observation it was taken at, so the first of an episode is kept);
// the sampler's action for it is dropped. EpisodeID (env.EpisodeIDer) gives the id of the
// episode of a sub-environment. TryReset is a no-op returning async=true: the next
// StartEpisode brings the next episode.
//
// # Back-pressure
//
// LogAction does not wait for the sampler's answer while fewer than MaxPendingLogs (default
// 1) logged observations of its episode wait for one; beyond that it blocks until the
// sampler answers one, so a simulator that logs faster than the sampler polls is held back
// instead of filling an unbounded queue. It gives up with ErrTimeout after Timeout, and
// ErrStopped after Stop, recording nothing (log it again). RLlib's log_action bounds the same
// thing more tightly: each call waits for its own observation to be answered (a round trip
// to the sampler per logged step). We deliberately let the call return once it is queued, so
// that the simulator steps while the sampler works, and hold it at the next LogAction; the
// bound on what waits per episode is the same with the default of 1.
//
// # Errors and lifetimes
//
// Calls with unknown, running or completed episode ids fail with ErrEpisodeNotFound,
// ErrEpisodeExists and ErrEpisodeDone (the last 10000 completed ids are remembered);
// StartEpisode beyond MaxConcurrentEpisodes fails with ErrTooManyEpisodes. Observations and
// actions outside their spaces are refused (ErrBadObservation, ErrBadAction) before anything
// is recorded. GetAction gives up with the context's error or ErrTimeout (a watchdog looks
// at the waiting calls every tenth of Timeout, at least every millisecond and at most every
// second, so a call gives up one to two such ticks after Timeout); if its observation was
// not polled yet it is taken back (its reward stays with the episode). When the run loop
// returns or panics, Poll returns a *RunLoopError once the observations reported before
// have been polled; Stop makes every blocked and later call return ErrStopped.
// Observations are copied when they are reported; the Obs slices Poll reports stay valid
// until the next Poll. GetAction returns the episode's own answer buffer (a map and slices
// for ExternalMultiAgentEnv): it stays valid until the episode's next GetAction, which
// reuses it, so that GetAction allocates nothing in steady state.
//
// # Ending episodes from outside
//
// A host that serves simulators it does not control (the policy server) gives up on
// episodes without their simulator: TruncateEpisode ends one truncated with each agent's
// last observation, TruncateIdle the ones without a call for a while, TruncateAll every
// running one (at a shutdown). An episode that has not observed yet ends without a report.
// The env keeps what that takes (each agent's last observation, a count of calls), so the
// host keeps no copy of the episodes' state. MultiAgentOptions.MaxAgents bounds the agents of
// an episode over its whole run (ErrTooManyAgents).
//
// # Performance
//
// The hot path takes no lock shared by all episodes: each call locks its own episode only,
// finds it without a lock (the id string StartEpisode returned, passed back, is found by its
// address), and waiting calls sleep on their episode's own channel. A GetAction with the run
// loop's context (or a context.WithValue of it) does not watch that context's Done channel,
// which all simulator goroutines share: they are woken when it is done. SendActions wakes
// one answered GetAction, which wakes two more before it returns, and so on, so the wake-ups
// spread over the simulator's goroutines. BenchmarkExternalEnv in package benchmarks runs
// 1024 simulator goroutines against an envrunner.Runner.
//
// # Truncation
//
// EndEpisodeTruncated ends an episode cut short (a time limit, the simulator giving up):
// the final observation is reported Truncated, with EnvStatus.Truncated, instead of
// Terminated, so that the sampler bootstraps the return from the value of the final
// observation rather than from zero.
//
// # Multi-agent episodes
//
// ExternalMultiAgentEnv is RLlib's ExternalMultiAgentEnv: observations, actions, rewards and
// dones are maps keyed by agent id, every agent sharing the observation and action spaces.
// Poll reports one env.AgentObs per agent of a call (AgentID = the map key), in the order of
// the agent ids, all in one Poll; MaxBatch counts agent observations. Rewards are summed per
// agent until that agent's next observation; a logged action is reported as the agent's
// OffPolicyAction with the observation it was taken at. LogReturns' dones mark agents done: the
// agent's next observation is its last (Terminated, no action); an agent marked done that
// does not appear in the episode's next call (GetAction, LogAction or EndEpisode) ends there
// with its last observation repeated. LogReturns' info maps agent ids to their infos,
// each kept until replaced.
// EndEpisode ends every agent that took part and has not ended, those missing from its
// observations with their last observation repeated, and the episode (EnvStatus.Terminated
// or, with EndEpisodeTruncated, Truncated, agents marked done staying Terminated).
// Observations of an agent that has ended, and an empty map or agent id, are
// ErrBadObservation; rewards and infos of an agent that has ended are dropped.
package externalenv
