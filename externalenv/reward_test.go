package externalenv_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/externalenv"
)

// TestRewardOverflow: issue 35's repro. Rewards of 3e38 each fit float32, but their sum does
// not: four of them to one step were summed to Infinity and written. A reward or a sum that
// float32 cannot hold is refused with a *RewardError, and the step keeps what fitted.
func TestRewardOverflow(t *testing.T) {
	e := newEnv(t, externalenv.Options{})
	id, err := e.StartEpisode("a", true)
	require.NoError(t, err)
	require.NoError(t, e.LogReturns(id, 3e38, nil))
	for range 3 {
		err = e.LogReturns(id, 3e38, nil)
		require.ErrorIs(t, err, externalenv.ErrBadReward)
	}
	var re *externalenv.RewardError
	require.True(t, errors.As(err, &re))
	assert.Equal(t, 6e38, re.Sum)
	assert.Equal(t, `externalenv: reward 3e+38 in episode "a" makes the step's sum of rewards 6e+38, which does not fit the rewards column (float32: at most 3.4028235e+38 in magnitude)`, err.Error())
	for _, bad := range []float64{1e39, -1e300, math.Inf(-1), math.NaN()} {
		require.ErrorIs(t, e.LogReturns(id, bad, nil), externalenv.ErrBadReward, "reward %v", bad)
	}
	assert.ErrorContains(t, e.LogReturns(id, math.NaN(), nil), "reward NaN in episode \"a\" is not finite")
	require.NoError(t, e.LogReturns(id, -1e38, nil)) // back within range: accepted
	require.NoError(t, e.LogAction(id, obsOf(0.01), []float32{0}))
	b := poll(t, e)
	require.Len(t, b.Agents, 1)
	assert.InDelta(t, 2e38, b.Agents[0].Reward, 1e30)
	assert.False(t, math.IsInf(float64(float32(b.Agents[0].Reward)), 0))

	// A reward logged while a GetAction waits goes with the observation's reward to the next
	// step when the GetAction gives up: their sum is checked too.
	require.NoError(t, e.SendActions([]env.Action{{Env: b.Agents[0].Env, Agent: env.DefaultAgentID, Action: []float32{1}}}))
	require.NoError(t, e.LogReturns(id, 3e38, nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	res := getAction(ctx, e, id, obsOf(0.02))
	time.Sleep(200 * time.Millisecond) // the observation is queued with its 3e38 (before that, the sum refuses it too)
	require.ErrorIs(t, e.LogReturns(id, 3e38, nil), externalenv.ErrBadReward)
	require.ErrorIs(t, (<-res).err, context.DeadlineExceeded)
	require.NoError(t, e.EndEpisode(id, obsOf(0.03)))
	b = poll(t, e)
	require.Len(t, b.Agents, 1)
	assert.InDelta(t, 3e38, b.Agents[0].Reward, 1e30)
}

// TestMultiAgentRewardOverflow: the same for an agent of a multi-agent episode; a call with
// one reward refused logs none of its rewards.
func TestMultiAgentRewardOverflow(t *testing.T) {
	e := newMAEnv(t, externalenv.MultiAgentOptions{})
	id, err := e.StartEpisode("m", true)
	require.NoError(t, err)
	require.NoError(t, e.LogReturns(id, map[env.AgentID]float64{"a": 3e38, "b": 1}, nil, nil))
	err = e.LogReturns(id, map[env.AgentID]float64{"a": 3e38, "b": 1}, nil, nil)
	require.ErrorIs(t, err, externalenv.ErrBadReward)
	assert.ErrorContains(t, err, `reward 3e+38 of agent "a" in episode "m" makes the step's sum of rewards 6e+38`)
	require.ErrorIs(t, e.LogReturns(id, map[env.AgentID]float64{"c": math.Inf(1)}, nil, nil), externalenv.ErrBadReward)
	require.NoError(t, e.EndEpisode(id, obsMap{"a": o2(0.1), "b": o2(0.2)}))
	b := maPoll(t, e)
	require.Len(t, b.Agents, 2)
	got := map[env.AgentID]float64{}
	for _, a := range b.Agents {
		got[a.Agent] = a.Reward
	}
	assert.Equal(t, map[env.AgentID]float64{"a": 3e38, "b": 1}, got)
}
