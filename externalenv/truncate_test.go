package externalenv_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/externalenv"
)

// TestTruncateEpisode: an episode given up from outside ends truncated with its last
// observation; one that never observed ends without a report; the id is done afterwards.
func TestTruncateEpisode(t *testing.T) {
	e := newEnv(t, externalenv.Options{})
	for _, id := range []string{"a", "quiet"} {
		_, err := e.StartEpisode(id, true)
		require.NoError(t, err)
	}
	require.NoError(t, e.LogAction("a", obsOf(0.1), []float32{1}))
	answer(t, e, poll(t, e))
	require.NoError(t, e.LogReturns("a", 2, nil))
	require.NoError(t, e.TruncateEpisode("a"))
	require.NoError(t, e.TruncateEpisode("quiet"))
	assert.Equal(t, 0, e.Running())
	b := poll(t, e)
	assert.Equal(t, []env.AgentObs{{Env: 0, Agent: env.DefaultAgentID, Obs: obsOf(0.1), Reward: 2, Truncated: true}}, b.Agents)
	assert.Equal(t, []env.EnvStatus{{Env: 0, Truncated: true}}, b.Envs)
	assert.ErrorIs(t, e.TruncateEpisode("a"), externalenv.ErrEpisodeDone)
	assert.ErrorIs(t, e.LogReturns("quiet", 1, nil), externalenv.ErrEpisodeDone)
	assert.ErrorIs(t, e.TruncateEpisode("x"), externalenv.ErrEpisodeNotFound)

	m := newMAEnv(t, externalenv.MultiAgentOptions{})
	_, err := m.StartEpisode("m", true)
	require.NoError(t, err)
	require.NoError(t, m.LogAction("m", obsMap{"p": o2(1), "q": o2(2)}, obsMap{"p": {0}, "q": {0}}))
	answer(t, m, maPoll(t, m))
	require.NoError(t, m.LogReturns("m", map[env.AgentID]float64{"p": 1}, map[env.AgentID]bool{"q": true}, nil))
	require.NoError(t, m.LogAction("m", obsMap{"p": o2(3), "q": o2(4)}, obsMap{"p": {0}})) // q's last
	answer(t, m, maPoll(t, m))
	n, err := m.TruncateAll()
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	b = maPoll(t, m)
	assert.Equal(t, []env.AgentObs{{Env: 0, Agent: "p", Obs: o2(3), Truncated: true}}, b.Agents) // q has ended
	assert.Equal(t, 0, m.Running())
}

// TestTruncateIdle: an episode without a call for the idle time and none in progress is
// truncated; a call or a waiting observation restarts its clock.
func TestTruncateIdle(t *testing.T) {
	e := newEnv(t, externalenv.Options{})
	t0 := time.Now()
	for _, id := range []string{"busy", "idle"} {
		_, err := e.StartEpisode(id, true)
		require.NoError(t, err)
	}
	require.NoError(t, e.LogAction("busy", obsOf(0.1), []float32{1})) // queued: in progress
	assert.Equal(t, 1, e.TruncateIdle(time.Minute, t0.Add(2*time.Minute)))
	assert.ErrorIs(t, e.LogReturns("idle", 1, nil), externalenv.ErrEpisodeDone)
	answer(t, e, poll(t, e))
	assert.Equal(t, 0, e.TruncateIdle(time.Minute, t0.Add(150*time.Second))) // idle since 2m only
	require.NoError(t, e.LogReturns("busy", 1, nil))                         // a call
	assert.Equal(t, 0, e.TruncateIdle(time.Minute, t0.Add(200*time.Second)))
	assert.Equal(t, 0, e.TruncateIdle(time.Minute, t0.Add(250*time.Second)))
	assert.Equal(t, 1, e.TruncateIdle(time.Minute, t0.Add(260*time.Second)))
	b := poll(t, e)
	assert.Equal(t, []env.AgentObs{{Env: 0, Agent: env.DefaultAgentID, Obs: obsOf(0.1), Reward: 1, Truncated: true}}, b.Agents)
	assert.Equal(t, 0, e.Running())
}

// TestMaxAgents: agents join during an episode up to MaxAgents in all; beyond, the call
// fails with ErrTooManyAgents and records nothing.
func TestMaxAgents(t *testing.T) {
	m := newMAEnv(t, externalenv.MultiAgentOptions{MaxAgents: 2})
	_, err := m.StartEpisode("m", true)
	require.NoError(t, err)
	require.NoError(t, m.LogAction("m", obsMap{"p": o2(1)}, obsMap{"p": {0}}))
	answer(t, m, maPoll(t, m))
	assert.ErrorIs(t, m.LogAction("m", obsMap{"q": o2(1), "r": o2(1)}, obsMap{"q": {0}, "r": {0}}), externalenv.ErrTooManyAgents)
	assert.ErrorIs(t, m.LogReturns("m", map[env.AgentID]float64{"q": 1, "r": 1}, nil, nil), externalenv.ErrTooManyAgents)
	require.NoError(t, m.LogReturns("m", map[env.AgentID]float64{"q": 1}, nil, nil))
	require.NoError(t, m.LogAction("m", obsMap{"p": o2(2), "q": o2(2)}, obsMap{"p": {0}, "q": {0}}))
	b := maPoll(t, m)
	assert.Len(t, b.Agents, 2)
}
