package runspec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/env/classic"
)

// TestBuildExternal: a served run is an ExternalEnv of the policy's spaces, single- or
// multi-agent, with a runner over it (through ObservePolls when given), one slot an episode.
func TestBuildExternal(t *testing.T) {
	cp, err := classic.NewCartPole(nil)
	require.NoError(t, err)
	for _, multi := range []bool{false, true} {
		wrapped := false
		x, err := BuildExternal(ExternalSpec{Policy: PolicySpec{Model: "random", ObservationSpace: cp.ObservationSpace(), ActionSpace: cp.ActionSpace()},
			MultiAgent: multi, MaxEpisodes: 3, MaxAgents: 4, FragmentLength: 10, Record: true,
			ObservePolls: func(be env.BaseEnv) env.BaseEnv { wrapped = true; return be }})
		require.NoError(t, err)
		assert.True(t, wrapped)
		assert.Equal(t, multi, x.MultiAgentEnv != nil)
		assert.Equal(t, !multi, x.Env != nil)
		require.NotNil(t, x.Runner)
		assert.True(t, x.Policy.Random)
		if multi {
			assert.Equal(t, 3, x.MultiAgentEnv.NumEnvs())
		} else {
			assert.Equal(t, 3, x.Env.NumEnvs())
		}
		require.NoError(t, x.Close())
	}
	_, err = BuildExternal(ExternalSpec{Policy: PolicySpec{Model: "random"}, MaxEpisodes: 1, FragmentLength: 1})
	assert.True(t, IsSpecError(err), "%v", err)
}
