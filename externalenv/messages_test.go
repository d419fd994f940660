package externalenv_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/externalenv"
)

// TestLimitMessagesNameNoGoFields: issue 35. The limits' errors reach HTTP clients and C API
// hosts, who never see Go's Options: "(MaxAgents)" and "(MaxConcurrentEpisodes)" are gone,
// the numbers stay.
func TestLimitMessagesNameNoGoFields(t *testing.T) {
	e := newMAEnv(t, externalenv.MultiAgentOptions{MaxConcurrentEpisodes: 1, MaxAgents: 2})
	id, err := e.StartEpisode("m", true)
	require.NoError(t, err)
	err = e.LogReturns(id, map[env.AgentID]float64{"a": 1, "b": 1, "c": 1}, nil, nil)
	require.ErrorIs(t, err, externalenv.ErrTooManyAgents)
	assert.ErrorContains(t, err, `episode "m" would have 3 agents, at most 2 allowed`)
	assert.NotContains(t, err.Error(), "MaxAgents")
	_, err = e.StartEpisode("n", true)
	require.ErrorIs(t, err, externalenv.ErrTooManyEpisodes)
	assert.ErrorContains(t, err, "1 running, the most allowed at once")
	assert.NotContains(t, err.Error(), "MaxConcurrentEpisodes")
}
