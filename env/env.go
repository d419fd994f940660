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
	// belongs to the MultiAgentStep and is reused by the next Clear/Add.
	Obs        []float32
	Reward     float64
	Terminated bool
	Truncated  bool
	Info       Info
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
	// Info holds episode-wide info, or nil.
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
	n := len(m.Agents)
	if n < cap(m.Agents) {
		m.Agents = m.Agents[:n+1]
	} else {
		m.Agents = append(m.Agents, AgentStep{})
	}
	a := &m.Agents[n]
	obs := a.Obs
	if cap(obs) < obsSize {
		obs = make([]float32, obsSize)
	}
	*a = AgentStep{ID: id, Obs: obs[:obsSize]}
	return a
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
