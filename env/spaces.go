package env

import (
	"fmt"
	"slices"

	"github.com/onnxrl/sampler/spaces"
)

var (
	_ Spaceser    = (*baseEnv)(nil)
	_ Spaceser    = (*vectorBaseEnv)(nil)
	_ Spaceser    = (*RemoteVectorEnv)(nil)
	_ AllResetter = (*baseEnv)(nil)
	_ AllResetter = (*vectorBaseEnv)(nil)
	_ AllResetter = (*RemoteVectorEnv)(nil)
	_ AllRenderer = (*baseEnv)(nil)
	_ AllRenderer = (*vectorBaseEnv)(nil)
	_ AllRenderer = (*RemoteVectorEnv)(nil)
)

// Spaceser is implemented by a BaseEnv that tells the spaces of its agents: RLlib's
// BaseEnv.observation_space, action_space and get_agent_ids, per agent as a MultiAgentEnv
// tells them (the methods are not named ObservationSpace and ActionSpace so that a type
// can implement both this and a VectorEnv or ExternalEnv's agent-free ones). Every BaseEnv
// of this package implements it; SpacesOf reads it from any BaseEnv.
type Spaceser interface {
	// Spaces returns the observation and action spaces of agent, or ok=false when the
	// environment has no such agent.
	Spaces(agent AgentID) (obs, act spaces.Space, ok bool)
	// PossibleAgents lists the agents the sub-environments may report, as sub-environment 0
	// lists them (DefaultAgentID for single-agent ones); nil when they are not known in
	// advance.
	PossibleAgents() []AgentID
}

// SpacesOf returns the observation and action spaces of agent in b, or an error when b does
// not implement Spaceser or has no such agent.
func SpacesOf(b BaseEnv, agent AgentID) (obs, act spaces.Space, err error) {
	s, ok := b.(Spaceser)
	if !ok {
		return nil, nil, fmt.Errorf("env: %T does not tell its spaces (it does not implement env.Spaceser)", b)
	}
	if obs, act, ok = s.Spaces(agent); !ok {
		return nil, nil, fmt.Errorf("env: %T has no agent %q (possible agents: %q)", b, agent, s.PossibleAgents())
	}
	return obs, act, nil
}

// agentSpaces are the spaces of the agents of one sub-environment, taken when it is made.
type agentSpaces struct {
	ids      []AgentID
	obs, act []spaces.Space // by index in ids
}

// spacesOfSub reads the agents and spaces of a slot's environment: only DefaultAgentID for
// an Env, the possible agents of a MultiAgentEnv. It runs on the goroutine that owns the
// environment (a panic in the environment's methods is an error).
func spacesOfSub(s *slot) (sp agentSpaces, err error) {
	defer recoverTo(&err)
	if _, multi := s.raw.(MultiAgentEnv); !multi {
		e := s.raw.(Env)
		return agentSpaces{ids: []AgentID{DefaultAgentID}, obs: []spaces.Space{e.ObservationSpace()}, act: []spaces.Space{e.ActionSpace()}}, nil
	}
	sp.ids = slices.Clone(s.env.PossibleAgents())
	for _, id := range sp.ids {
		sp.obs = append(sp.obs, s.env.ObservationSpace(id))
		sp.act = append(sp.act, s.env.ActionSpace(id))
	}
	return sp, nil
}

func (a *agentSpaces) spaces(agent AgentID) (obs, act spaces.Space, ok bool) {
	i := slices.Index(a.ids, agent)
	if i < 0 {
		return nil, nil, false
	}
	return a.obs[i], a.act[i], true
}

// Spaces implements Spaceser with the spaces of sub-environment 0 as it is now (asked on the
// caller's goroutine, which owns the synchronous adapter's sub-environments): DefaultAgentID
// for an Env, the possible agents of a MultiAgentEnv.
func (b *baseEnv) Spaces(agent AgentID) (obs, act spaces.Space, ok bool) {
	sp, err := spacesOfSub(b.slots[0])
	if err != nil {
		return nil, nil, false
	}
	return sp.spaces(agent)
}

// PossibleAgents implements Spaceser: sub-environment 0's possible agents.
func (b *baseEnv) PossibleAgents() []AgentID { return slices.Clone(b.slots[0].env.PossibleAgents()) }

// Spaces implements Spaceser: the VectorEnv's spaces for DefaultAgentID.
func (b *vectorBaseEnv) Spaces(agent AgentID) (obs, act spaces.Space, ok bool) {
	if agent != DefaultAgentID {
		return nil, nil, false
	}
	return b.v.ObservationSpace(), b.actSpace, true
}

// PossibleAgents implements Spaceser: DefaultAgentID.
func (b *vectorBaseEnv) PossibleAgents() []AgentID { return []AgentID{DefaultAgentID} }

// Spaces implements Spaceser with the spaces sub-environment 0 told when it was made (as
// RLlib's RemoteBaseEnv asks its first actor once): the sub-environments belong to their
// goroutines, so an agent that was not among its possible agents then is not known.
func (r *RemoteVectorEnv) Spaces(agent AgentID) (obs, act spaces.Space, ok bool) {
	return r.spaces.spaces(agent)
}

// PossibleAgents implements Spaceser: sub-environment 0's possible agents when it was made.
func (r *RemoteVectorEnv) PossibleAgents() []AgentID { return slices.Clone(r.spaces.ids) }
