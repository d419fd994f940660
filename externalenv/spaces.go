package externalenv

import (
	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/spaces"
)

var (
	_ env.Spaceser = (*ExternalEnv)(nil)
	_ env.Spaceser = (*ExternalMultiAgentEnv)(nil)
)

// Spaces implements env.Spaceser: the agent, env.DefaultAgentID, has the spaces of the
// options.
func (e *ExternalEnv) Spaces(agent env.AgentID) (obs, act spaces.Space, ok bool) {
	if agent != env.DefaultAgentID {
		return nil, nil, false
	}
	return e.ObservationSpace(), e.ActionSpace(), true
}

// PossibleAgents implements env.Spaceser: env.DefaultAgentID.
func (e *ExternalEnv) PossibleAgents() []env.AgentID { return []env.AgentID{env.DefaultAgentID} }

// Spaces implements env.Spaceser: every agent has the spaces of the options.
func (e *ExternalMultiAgentEnv) Spaces(env.AgentID) (obs, act spaces.Space, ok bool) {
	return e.ObservationSpace(), e.ActionSpace(), true
}

// PossibleAgents implements env.Spaceser: nil, the simulator names its agents as they come.
func (e *ExternalMultiAgentEnv) PossibleAgents() []env.AgentID { return nil }
