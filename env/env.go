// Package env defines the environment layer of the sampler: single-agent environments (Env),
// multi-agent environments (MultiAgentEnv), vectorized environments (VectorEnv) and the
// interface the sampling loop drives (BaseEnv), with adapters from the first three to BaseEnv,
// a RemoteVectorEnv that steps each sub-environment on its own goroutine, and a registry of
// environments by name.
//
// # Data layout
//
// Observations and actions travel in the raw layout of their space (see package spaces): a flat
// []float32 of length Space.Size(). A Discrete value is one float32 holding the value itself;
// Box values are row-major. Environments write observations into slices owned by the caller,
// so stepping allocates nothing.
//
// # Driving a BaseEnv
//
// A sampler turns whatever it is given into a BaseEnv: NewBaseEnv (Env makers, one agent
// DefaultAgentID per sub-environment), NewMultiAgentBaseEnv (MultiAgentEnv makers),
// NewVectorBaseEnv (a VectorEnv, e.g. from NewVectorEnv), ToBaseEnv (any of these, as RLlib's
// convert_to_base_env), or NewRemoteVectorEnv (each sub-environment on its own goroutine).
// BaseEnvOptions sets NumEnvs, the Seed (sub-environment i is seeded with Seed+i on its first
// reset) and RestartFailedSubEnvironments. One goroutine then loops:
//
//	batch.Clear()
//	err := b.Poll(&batch)                 // first Poll: every sub-env's reset (EnvStatus.Reset)
//	for _, a := range batch.Agents { ... } // act for each agent that is not Terminated/Truncated
//	for _, st := range batch.Envs {        // episode over (__all__) or failed (st.Err): reset it
//		async, err := b.TryReset(st.Env, env.Seed{}, &resets) // sync: first obs appended to resets,
//	}                                                         // they need actions too
//	err = b.SendActions(actions)          // exactly one action per ready agent
//
// SendActions checks the actions before stepping anything: a missing, duplicate or extra
// action, or one for an unknown sub-environment or agent, is an error wrapping ErrBadActions
// that names the env id and agent; an action outside the agent's action space is an
// *ActionError; an action for a sub-environment whose episode ended is ErrNeedsReset. The
// synchronous adapters step inside SendActions and the next Poll reports the results; the
// RemoteVectorEnv starts the steps and Poll collects the ones that are ready.
//
// # Columns
//
// NewVectorBaseEnv's BaseEnv also implements Columnar: a caller that drives every
// sub-environment's one agent can use PollColumns, ResetColumns and StepColumns instead,
// reading observations, rewards and flags from, and writing actions into, the shared
// buffers of Columns(), with no per-agent AgentObs or Action records (envrunner does so).
//
// # Optional interfaces
//
// Beyond the four BaseEnv methods, every adapter of this package (and the ExternalEnvs of
// package externalenv, for Spaceser) implements the optional interfaces a caller finds by
// type assertion: SubEnvironmentser (RLlib's get_sub_environments), TryRenderer and
// AllRenderer (try_render of one or of every sub-environment), AllResetter (try_reset with
// env_id=None: every sub-environment) and Spaceser (observation_space, action_space and
// get_agent_ids, per agent; SpacesOf reads it from any BaseEnv).
//
// # RemoteVectorEnv
//
// RemoteVectorEnvOptions.BatchWait is remote_env_batch_wait_ms, measured as RLlib's
// RemoteBaseEnv.poll measures it: a window from the start of Poll in which it waits for
// every step in flight, returning early when all are ready and at the window's end with
// those that are, repeated while none is. Stop waits at most StopWait for steps in flight;
// a hung sub-environment is left to its goroutine, which closes it when its step returns
// (see StopTimeoutError). A Poll with nothing in flight fails with ErrNothingInFlight: the
// sub-environments wait for actions that never came (a failed inference), and only Stop
// releases them.
//
// # Buffers and lifetimes
//
// The caller owns the Batch and reuses it: Poll and TryReset only append to it, and Clear
// keeps its storage, so the steady state allocates nothing. AgentObs.Obs points into
// buffers owned by the BaseEnv (one per sub-environment and agent, or one row of a
// VectorEnv's observation buffer); it stays valid until the next Poll, SendActions or
// TryReset on the same BaseEnv, so copy it (for instance into a batch tensor) before then.
// Info maps are the environment's and are not copied. Action slices given to SendActions are
// read during the call only (RemoteVectorEnv copies them).
//
// # VectorEnv and autoreset
//
// A VectorEnv does not autoreset: a sub-environment whose episode ended keeps its final
// observation until ResetAt, and Step fails with ErrNeedsReset (naming the index) until
// then. The adapter from VectorEnv to BaseEnv therefore needs every ended sub-environment to
// be reset with TryReset before the next SendActions, as RLlib's sampler does.
//
// # Faults
//
// An error or panic in a sub-environment's Reset or Step never crashes the process (a panic
// becomes a *PanicError). With RestartFailedSubEnvironments the sub-environment is recreated
// from its maker, reported once as EnvStatus{Env: i, Err: err} with no agents (the episode is
// faulty), and waits for TryReset; without it the call that ran it returns a *SubEnvError
// naming the sub-environment and the operation.
//
// # Test environments
//
// RandomEnv and RandomMultiAgentEnv (registered as "RandomEnv" and "RandomMultiAgentEnv")
// sample observations from configurable spaces and inject failures. Their registry config
// keys: observation_space and action_space (spaces JSON, as a string or a decoded JSON
// object; defaults Box(-1, 1, (4,)) and Discrete(2)), episode_len (fixed) or
// min_episode_len/max_episode_len (random per episode; default 10), p_terminated, reward
// (default 0), reward_is_step (reward = step number in the episode), step_delay ("5ms" or
// seconds), p_error and p_panic (per step), fail_at_step and fail_at_reset (the k-th call of
// an instance fails), fail_by_panic, seed; RandomMultiAgentEnv adds num_agents (default 2)
// and join_every (agent i joins at step i*join_every). See RandomEnvConfig.
package env

import (
	"github.com/onnxrl/sampler/spaces"
)

// Seed is an optional seed for Reset. The zero value means "do not reseed": the environment
// keeps drawing from the random source it already has (gymnasium's reset(seed=None)).
type Seed struct {
	Value uint64
	Set   bool
}

// WithSeed returns a Seed that reseeds the environment's random source with v.
func WithSeed(v uint64) Seed { return Seed{Value: v, Set: true} }

// Info is the per-step info dictionary. It is nil on steps that report nothing, so the common
// case allocates nothing.
type Info map[string]any

// StepResult is what one Env.Step returns besides the next observation.
type StepResult struct {
	Reward float64
	// Terminated: the episode reached a terminal state of the MDP (gymnasium's terminated).
	Terminated bool
	// Truncated: the episode was cut short, typically by a time limit (gymnasium's truncated).
	Truncated bool
	Info      Info
}

// Env is a single-agent environment with gymnasium's semantics.
//
// Reset starts a new episode and writes the first observation into obs (len
// ObservationSpace().Size()). Step applies action (raw layout of ActionSpace()) and writes
// the next observation into obs. The slices belong to the caller; the environment must not
// keep them after the call returns.
//
// Step returns an error (and changes nothing) when action is not in the action space, unless
// the environment documents that it clips, and when the episode has ended and Reset was not
// called since (ErrNeedsReset).
//
// An Env is not safe for concurrent use: one goroutine owns it.
type Env interface {
	ObservationSpace() spaces.Space
	ActionSpace() spaces.Space
	Reset(seed Seed, obs []float32) (Info, error)
	Step(action []float32, obs []float32) (StepResult, error)
}

// Renderer is implemented by environments that can render their current state. What Render
// returns depends on the environment (a string for text rendering, an image, ...).
type Renderer interface {
	Render() (any, error)
}

// AgentID names an agent of a multi-agent environment.
type AgentID = string

// DefaultAgentID is the agent id that single-agent environments report under BaseEnv
// (RLlib's "agent0").
const DefaultAgentID AgentID = "agent0"

// AgentStep is what a multi-agent environment reports for one agent on a reset or a step.
type AgentStep struct {
	ID AgentID
	// Obs is the agent's observation in the raw layout of its observation space. Its storage
	// belongs to the MultiAgentStep and is reused by the next Clear/Add. It is nil for a
	// reward without an observation (AddReward).
	Obs        []float32
	Reward     float64
	Terminated bool
	Truncated  bool
	Info       Info

	buf []float32 // the observation storage of an entry made by AddReward (Obs is nil)
}

// MultiAgentStep collects what a multi-agent environment reports on one reset or step: the
// agents that report this step (those in it with an observation act next, unless they are
// done), and the episode-wide flags (RLlib's "__all__"). It is reused from step to step, so
// adding agents allocates nothing once it has seen the largest step.
type MultiAgentStep struct {
	Agents []AgentStep
	// AllTerminated and AllTruncated are RLlib's terminateds["__all__"] and
	// truncateds["__all__"]: either ends the episode for every agent.
	AllTerminated bool
	AllTruncated  bool
	// Info holds episode-wide info (RLlib's infos["__common__"]), or nil; the adapters report
	// it as EnvStatus.Info.
	Info Info
}

// Clear empties m, keeping its storage.
func (m *MultiAgentStep) Clear() {
	m.Agents = m.Agents[:0]
	m.AllTerminated, m.AllTruncated = false, false
	m.Info = nil
}

// Add appends an entry for agent id with an observation buffer of obsSize elements (contents
// unspecified: the environment writes them) and returns it. The pointer is valid until the
// next Add or Clear.
func (m *MultiAgentStep) Add(id AgentID, obsSize int) *AgentStep {
	a, obs := m.next()
	if cap(obs) < obsSize {
		obs = make([]float32, obsSize)
	}
	*a = AgentStep{ID: id, Obs: obs[:obsSize]}
	return a
}

// AddReward appends a reward for agent id without an observation (RLlib's rewards dict may
// name agents that are not in the observations): the agent does not act next, and the reward
// is added to its next transition (or to the final row the runner makes for it when the
// episode ends before it observes again). The entry's Obs is nil.
func (m *MultiAgentStep) AddReward(id AgentID, reward float64) {
	a, buf := m.next()
	*a = AgentStep{ID: id, Reward: reward, buf: buf} // the buffer is kept for a later Add
}

// next extends Agents by one entry and returns it with the observation buffer an earlier
// entry in its place left (nil when none), for the caller to overwrite the entry.
func (m *MultiAgentStep) next() (*AgentStep, []float32) {
	n := len(m.Agents)
	if n < cap(m.Agents) {
		m.Agents = m.Agents[:n+1]
	} else {
		m.Agents = append(m.Agents, AgentStep{})
	}
	a := &m.Agents[n]
	if a.Obs != nil {
		return a, a.Obs
	}
	return a, a.buf
}

// Find returns the entry for agent id, or nil.
func (m *MultiAgentStep) Find(id AgentID) *AgentStep {
	for i := range m.Agents {
		if m.Agents[i].ID == id {
			return &m.Agents[i]
		}
	}
	return nil
}

// AgentAction is one agent's action (raw layout of its action space).
type AgentAction struct {
	ID     AgentID
	Action []float32
}

// MultiAgentEnv is a multi-agent environment with RLlib's MultiAgentEnv semantics. Agents may
// appear and leave during an episode: only the agents that reported an observation (and are
// not done) on the last Reset or Step may be given actions on the next Step; an agent that is
// terminated or truncated is gone for the rest of the episode. The episode ends when
// AllTerminated or AllTruncated is set.
//
// Reset and Step fill out (after clearing it). Step returns an error for an action outside the
// agent's action space, for an agent that is not expected to act, and when the episode has
// ended without Reset (ErrNeedsReset).
//
// A MultiAgentEnv is not safe for concurrent use.
type MultiAgentEnv interface {
	// PossibleAgents lists every agent id that can appear, in a fixed order.
	PossibleAgents() []AgentID
	ObservationSpace(id AgentID) spaces.Space
	ActionSpace(id AgentID) spaces.Space
	Reset(seed Seed, out *MultiAgentStep) error
	Step(actions []AgentAction, out *MultiAgentStep) error
}
