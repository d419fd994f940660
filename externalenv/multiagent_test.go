package externalenv_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/spaces"
)

type obsMap = map[env.AgentID][]float32

func newMAEnv(tb testing.TB, opts externalenv.MultiAgentOptions) *externalenv.ExternalMultiAgentEnv {
	tb.Helper()
	if opts.ObservationSpace == nil {
		opts.ObservationSpace, opts.ActionSpace = spaces.NewBox(-10, 10, 2), &spaces.Discrete{N: 3}
	}
	e, err := externalenv.NewMultiAgent(opts)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = e.Stop() })
	return e
}

type maResult struct {
	act obsMap
	err error
}

// maGetAction calls GetAction on its own goroutine and returns the channel of its result
// (the map copied, as it is the episode's own).
func maGetAction(ctx context.Context, e *externalenv.ExternalMultiAgentEnv, id string, obs obsMap) <-chan maResult {
	ch := make(chan maResult, 1)
	go func() {
		a, err := e.GetAction(ctx, id, obs)
		var cp obsMap
		if a != nil {
			cp = obsMap{}
			for k, v := range a {
				cp[k] = append([]float32(nil), v...)
			}
		}
		ch <- maResult{cp, err}
	}()
	return ch
}

func maPoll(tb testing.TB, e *externalenv.ExternalMultiAgentEnv) *env.Batch {
	tb.Helper()
	b := &env.Batch{}
	require.NoError(tb, e.Poll(b))
	return b
}

func o2(v float32) []float32 { return []float32{v, -v} }

// answer sends action k+1 to the k-th polled agent that is not done.
func answerAll(tb testing.TB, e env.BaseEnv, b *env.Batch) {
	tb.Helper()
	var acts []env.Action
	for _, a := range b.Agents {
		if !a.Terminated && !a.Truncated {
			acts = append(acts, env.Action{Env: a.Env, Agent: a.Agent, Action: []float32{float32(len(acts)%2 + 1)}})
		}
	}
	require.NoError(tb, e.SendActions(acts))
}

// TestMultiAgentProtocol: per-agent rows in id order, per-agent rewards summed until each
// agent's next observation, per-agent logged actions as OffPolicyAction with the agent's
// next observation, an agent marked done ending with its next observation or with its last
// one repeated, the episode's end for the agents left.
func TestMultiAgentProtocol(t *testing.T) {
	e := newMAEnv(t, externalenv.MultiAgentOptions{MaxConcurrentEpisodes: 2})
	ctx := context.Background()
	id, err := e.StartEpisode("ep", true)
	require.NoError(t, err)

	res := maGetAction(ctx, e, id, obsMap{"b": o2(2), "a": o2(1)})
	b := maPoll(t, e)
	assert.Equal(t, []env.AgentObs{
		{Env: 0, Agent: "a", Obs: o2(1)},
		{Env: 0, Agent: "b", Obs: o2(2)},
	}, b.Agents)
	assert.Equal(t, []env.EnvStatus{{Env: 0, Reset: true}}, b.Envs)
	require.NoError(t, e.SendActions([]env.Action{{Env: 0, Agent: "b", Action: []float32{2}}, {Env: 0, Agent: "a", Action: []float32{1}}}))
	r := <-res
	require.NoError(t, r.err)
	assert.Equal(t, obsMap{"a": {1}, "b": {2}}, r.act)

	// Rewards per agent, summed; "c" joins; a logs its own action, b and c ask.
	require.NoError(t, e.LogReturns(id, map[env.AgentID]float64{"a": 1, "b": 10}, nil, nil))
	require.NoError(t, e.LogReturns(id, map[env.AgentID]float64{"a": 0.5, "c": 7}, nil, env.Info{"b": env.Info{"k": 1}}))
	require.NoError(t, e.LogAction(id, obsMap{"a": o2(3)}, obsMap{"a": {0}}))
	b = maPoll(t, e)
	assert.Equal(t, []env.AgentObs{{Env: 0, Agent: "a", Obs: o2(3), Reward: 1.5}}, b.Agents)
	assert.Empty(t, b.Envs)
	answerAll(t, e, b) // dropped: a logged its action
	res = maGetAction(ctx, e, id, obsMap{"a": o2(4), "b": o2(5), "c": o2(6)})
	b = maPoll(t, e)
	assert.Equal(t, []env.AgentObs{
		{Env: 0, Agent: "a", Obs: o2(4), OffPolicyAction: []float32{0}},
		{Env: 0, Agent: "b", Obs: o2(5), Reward: 10, Info: env.Info{"k": 1}},
		{Env: 0, Agent: "c", Obs: o2(6), Reward: 7},
	}, b.Agents)
	answerAll(t, e, b)
	r = <-res
	require.NoError(t, r.err)
	assert.Equal(t, obsMap{"a": {1}, "b": {2}, "c": {1}}, r.act)

	// b is done and observes once more (its last, no action); c is done and does not
	// observe: it ends with its last observation repeated.
	require.NoError(t, e.LogReturns(id, map[env.AgentID]float64{"b": -1, "c": -2}, map[env.AgentID]bool{"b": true, "c": true, "a": false}, nil))
	res = maGetAction(ctx, e, id, obsMap{"a": o2(7), "b": o2(8)})
	b = maPoll(t, e)
	assert.Equal(t, []env.AgentObs{
		{Env: 0, Agent: "a", Obs: o2(7)},
		{Env: 0, Agent: "b", Obs: o2(8), Reward: -1, Terminated: true},
		{Env: 0, Agent: "c", Obs: o2(6), Reward: -2, Terminated: true},
	}, b.Agents)
	assert.Empty(t, b.Envs)
	answerAll(t, e, b)
	r = <-res
	require.NoError(t, r.err)
	assert.Equal(t, obsMap{"a": {1}}, r.act)
	_, err = e.GetAction(ctx, id, obsMap{"b": o2(0)})
	assert.ErrorIs(t, err, externalenv.ErrBadObservation, "b is done")

	// The end: a's final observation; rewards of ended agents are dropped.
	require.NoError(t, e.LogReturns(id, map[env.AgentID]float64{"a": 3, "b": 100}, nil, nil))
	require.NoError(t, e.EndEpisode(id, obsMap{"a": o2(9)}))
	b = maPoll(t, e)
	assert.Equal(t, []env.AgentObs{{Env: 0, Agent: "a", Obs: o2(9), Reward: 3, Terminated: true}}, b.Agents)
	assert.Equal(t, []env.EnvStatus{{Env: 0, Terminated: true}}, b.Envs)
	async, err := e.TryReset(0, env.Seed{}, b)
	require.NoError(t, err)
	assert.True(t, async)
	assert.ErrorIs(t, e.EndEpisode(id, obsMap{"a": o2(0)}), externalenv.ErrEpisodeDone)
}
