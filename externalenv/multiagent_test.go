package externalenv_test

import (
	"context"
	"errors"
	"fmt"
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
// agent's next observation, per-agent logged actions as OffPolicyAction with the
// observation they were taken at, infos kept until replaced, an agent marked done ending with its next observation or with its last
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
	assert.Equal(t, []env.AgentObs{{Env: 0, Agent: "a", Obs: o2(3), Reward: 1.5, OffPolicyAction: []float32{0}}}, b.Agents)
	assert.Empty(t, b.Envs)
	answerAll(t, e, b) // dropped: a logged its action
	res = maGetAction(ctx, e, id, obsMap{"a": o2(4), "b": o2(5), "c": o2(6)})
	b = maPoll(t, e)
	assert.Equal(t, []env.AgentObs{
		{Env: 0, Agent: "a", Obs: o2(4)},
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
		{Env: 0, Agent: "b", Obs: o2(8), Reward: -1, Terminated: true, Info: env.Info{"k": 1}},
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

// TestMultiAgentErrors: the typed errors of the simulator-side API, none of which records
// anything.
func TestMultiAgentErrors(t *testing.T) {
	e := newMAEnv(t, externalenv.MultiAgentOptions{MaxConcurrentEpisodes: 2})
	ctx := context.Background()
	_, err := e.StartEpisode("a", true)
	require.NoError(t, err)
	_, err = e.StartEpisode("a", true)
	assert.ErrorIs(t, err, externalenv.ErrEpisodeExists)
	_, err = e.StartEpisode("b", true)
	require.NoError(t, err)
	_, err = e.StartEpisode("c", true)
	assert.ErrorIs(t, err, externalenv.ErrTooManyEpisodes)

	_, err = e.GetAction(ctx, "x", obsMap{"p": o2(0)})
	assert.ErrorIs(t, err, externalenv.ErrEpisodeNotFound)
	assert.ErrorIs(t, e.LogAction("x", obsMap{"p": o2(0)}, obsMap{"p": {0}}), externalenv.ErrEpisodeNotFound)
	assert.ErrorIs(t, e.LogReturns("x", map[env.AgentID]float64{"p": 1}, nil, nil), externalenv.ErrEpisodeNotFound)
	assert.ErrorIs(t, e.EndEpisode("x", obsMap{"p": o2(0)}), externalenv.ErrEpisodeNotFound)
	assert.ErrorIs(t, e.EndEpisodeTruncated("x", obsMap{"p": o2(0)}), externalenv.ErrEpisodeNotFound)

	for name, obs := range map[string]obsMap{
		"empty": {}, "nil": nil, "empty id": {"": o2(0)}, "short": {"p": {0}},
		"nan": {"p": {float32(nan()), 0}}, "bounds": {"p": {11, 0}}, "one bad of two": {"p": o2(0), "q": {0, 20}},
	} {
		_, err = e.GetAction(ctx, "a", obs)
		assert.ErrorIs(t, err, externalenv.ErrBadObservation, name)
		assert.ErrorIs(t, e.LogAction("a", obs, nil), externalenv.ErrBadObservation, name)
		assert.ErrorIs(t, e.EndEpisode("a", obs), externalenv.ErrBadObservation, name)
		assert.ErrorIs(t, e.EndEpisodeTruncated("a", obs), externalenv.ErrBadObservation, name)
	}
	for name, acts := range map[string]obsMap{
		"missing": {}, "nil": nil, "outside": {"p": {3}}, "fraction": {"p": {0.5}}, "long": {"p": {0, 1}},
		"extra agent": {"p": {0}, "q": {1}},
	} {
		assert.ErrorIs(t, e.LogAction("a", obsMap{"p": o2(0)}, acts), externalenv.ErrBadAction, name)
	}
	assert.ErrorIs(t, e.LogReturns("a", map[env.AgentID]float64{"": 1}, nil, nil), externalenv.ErrBadObservation)
	assert.ErrorIs(t, e.LogReturns("a", nil, map[env.AgentID]bool{"": true}, nil), externalenv.ErrBadObservation)
	assert.ErrorIs(t, e.LogReturns("a", nil, nil, env.Info{"": env.Info{}}), externalenv.ErrBadObservation)
	assert.Error(t, e.LogReturns("a", nil, nil, env.Info{"p": 3}), "an info must be a map")

	// Busy: a second GetAction while the first waits for its answers.
	res := maGetAction(ctx, e, "a", obsMap{"p": o2(0.5)})
	b := maPoll(t, e) // the first GetAction's observations are in flight: it waits
	require.Len(t, b.Agents, 1)
	_, err = e.GetAction(ctx, "a", obsMap{"p": o2(0.25)})
	assert.ErrorIs(t, err, externalenv.ErrEpisodeBusy)
	answerAll(t, e, b)
	require.NoError(t, (<-res).err)

	// Nothing above was recorded: the next observation of "a" comes with the reward logged
	// since, and the next Poll holds it alone.
	require.NoError(t, e.LogReturns("a", map[env.AgentID]float64{"p": 2}, nil, nil))
	require.NoError(t, e.LogAction("a", obsMap{"p": o2(1)}, obsMap{"p": {2}}))
	b = maPoll(t, e)
	assert.Equal(t, []env.AgentObs{{Env: 0, Agent: "p", Obs: o2(1), Reward: 2, OffPolicyAction: []float32{2}}}, b.Agents)
	answerAll(t, e, b)

	// Timeout: nothing polls, so GetAction of "b" times out (the watchdog).
	e2 := newMAEnv(t, externalenv.MultiAgentOptions{MaxConcurrentEpisodes: 1, Timeout: 1})
	_, err = e2.StartEpisode("b", true)
	require.NoError(t, err)
	_, err = e2.GetAction(ctx, "b", obsMap{"p": o2(0)})
	assert.ErrorIs(t, err, externalenv.ErrTimeout)

	// The end completes the id.
	require.NoError(t, e.EndEpisode("a", obsMap{"p": o2(2)}))
	for _, err := range []error{
		e.EndEpisode("a", obsMap{"p": o2(0)}),
		e.LogReturns("a", nil, nil, nil),
		e.LogAction("a", obsMap{"p": o2(0)}, obsMap{"p": {0}}),
	} {
		assert.ErrorIs(t, err, externalenv.ErrEpisodeDone)
	}
	_, err = e.GetAction(ctx, "a", obsMap{"p": o2(0)})
	assert.ErrorIs(t, err, externalenv.ErrEpisodeDone)
	_, err = e.StartEpisode("a", true)
	assert.ErrorIs(t, err, externalenv.ErrEpisodeDone)
}

// TestMultiAgentSendActionsErrors: actions for agents that wait for none, of the wrong
// length, twice, or missing are refused (env.ErrBadActions).
func TestMultiAgentSendActionsErrors(t *testing.T) {
	e := newMAEnv(t, externalenv.MultiAgentOptions{MaxConcurrentEpisodes: 2})
	_, err := e.StartEpisode("a", true)
	require.NoError(t, err)
	require.NoError(t, e.LogAction("a", obsMap{"p": o2(0), "q": o2(1)}, obsMap{"p": {0}, "q": {1}}))
	b := maPoll(t, e)
	require.Len(t, b.Agents, 2)
	for name, acts := range map[string][]env.Action{
		"other env":   {{Env: 1, Agent: "p", Action: []float32{0}}},
		"bad env":     {{Env: -1, Agent: "p", Action: []float32{0}}},
		"other agent": {{Env: 0, Agent: "r", Action: []float32{0}}},
		"length":      {{Env: 0, Agent: "p", Action: []float32{0, 1}}},
	} {
		assert.ErrorIs(t, e.SendActions(acts), env.ErrBadActions, name)
	}
	err = e.SendActions([]env.Action{{Env: 0, Agent: "p", Action: []float32{0}}})
	assert.ErrorIs(t, err, env.ErrBadActions, "q's action is missing")
	assert.Contains(t, err.Error(), `"q"`)
	assert.ErrorIs(t, e.SendActions([]env.Action{{Env: 0, Agent: "p", Action: []float32{0}}}), env.ErrBadActions, "p twice")
	require.NoError(t, e.SendActions([]env.Action{{Env: 0, Agent: "q", Action: []float32{0}}}))
}

// TestMultiAgentBatchLimit: MaxBatch counts agent observations and never splits a call.
func TestMultiAgentBatchLimit(t *testing.T) {
	e := newMAEnv(t, externalenv.MultiAgentOptions{MaxConcurrentEpisodes: 3, MaxBatch: 3})
	for _, id := range []string{"x", "y", "z"} {
		_, err := e.StartEpisode(id, true)
		require.NoError(t, err)
	}
	require.NoError(t, e.LogAction("x", obsMap{"p": o2(1), "q": o2(1)}, obsMap{"p": {0}, "q": {0}}))
	require.NoError(t, e.LogAction("y", obsMap{"p": o2(2), "q": o2(2)}, obsMap{"p": {0}, "q": {0}}))
	require.NoError(t, e.LogAction("z", obsMap{"a": o2(3), "b": o2(3), "c": o2(3), "d": o2(3)}, obsMap{"a": {0}, "b": {0}, "c": {0}, "d": {0}}))
	for _, want := range []int{2, 2, 4} { // x's two, y's two (not three), z's four alone
		b := maPoll(t, e)
		require.Len(t, b.Agents, want)
		answerAll(t, e, b)
	}
}

// TestMultiAgentSlotsAndLimit: with MaxConcurrentEpisodes 1, a second episode starts only
// once the first has ended, and takes its sub-environment after the end was polled.
func TestMultiAgentSlotsAndLimit(t *testing.T) {
	e := newMAEnv(t, externalenv.MultiAgentOptions{MaxConcurrentEpisodes: 1})
	_, err := e.StartEpisode("a", true)
	require.NoError(t, err)
	_, err = e.StartEpisode("b", false)
	require.ErrorIs(t, err, externalenv.ErrTooManyEpisodes)
	require.NoError(t, e.EndEpisodeTruncated("a", obsMap{"p": o2(1)}))
	_, err = e.StartEpisode("b", false)
	require.NoError(t, err)
	require.NoError(t, e.LogAction("b", obsMap{"p": o2(2)}, obsMap{"p": {1}}))
	b := maPoll(t, e)
	assert.Equal(t, []env.AgentObs{{Env: 0, Agent: "p", Obs: o2(1), Truncated: true}}, b.Agents)
	assert.Equal(t, []env.EnvStatus{{Env: 0, Reset: true, Truncated: true}}, b.Envs)
	b = maPoll(t, e)
	assert.Equal(t, []env.AgentObs{{Env: 0, Agent: "p", Obs: o2(2), OffPolicyAction: []float32{1}}}, b.Agents)
	assert.Equal(t, []env.EnvStatus{{Env: 0, Reset: true, TrainingDisabled: true}}, b.Envs)
}

// TestMultiAgentTruncation: EndEpisodeTruncated reports the agents left Truncated (those not
// in its observations with their last one), agents marked done Terminated.
func TestMultiAgentTruncation(t *testing.T) {
	e := newMAEnv(t, externalenv.MultiAgentOptions{})
	_, err := e.StartEpisode("ep", true)
	require.NoError(t, err)
	require.NoError(t, e.LogAction("ep", obsMap{"p": o2(1), "q": o2(2), "r": o2(3)}, obsMap{"p": {0}, "q": {1}, "r": {2}}))
	b := maPoll(t, e)
	assert.Equal(t, []env.AgentObs{
		{Env: 0, Agent: "p", Obs: o2(1), OffPolicyAction: []float32{0}},
		{Env: 0, Agent: "q", Obs: o2(2), OffPolicyAction: []float32{1}},
		{Env: 0, Agent: "r", Obs: o2(3), OffPolicyAction: []float32{2}},
	}, b.Agents)
	answerAll(t, e, b)
	require.NoError(t, e.LogReturns("ep", map[env.AgentID]float64{"p": 1, "q": 2, "r": 3}, map[env.AgentID]bool{"q": true}, nil))
	require.NoError(t, e.EndEpisodeTruncated("ep", obsMap{"p": o2(4), "q": o2(5)}))
	b = maPoll(t, e)
	assert.Equal(t, []env.AgentObs{
		{Env: 0, Agent: "p", Obs: o2(4), Reward: 1, Truncated: true},
		{Env: 0, Agent: "q", Obs: o2(5), Reward: 2, Terminated: true},
		{Env: 0, Agent: "r", Obs: o2(3), Reward: 3, Truncated: true},
	}, b.Agents)
	assert.Equal(t, []env.EnvStatus{{Env: 0, Truncated: true}}, b.Envs)
}

// TestMultiAgentTakeBack: a GetAction that gives up before its observations were polled
// takes them back; the rewards stay with the agents (and go to the agents' next
// observations), and an agent marked done ends with the next call instead.
func TestMultiAgentTakeBack(t *testing.T) {
	e := newMAEnv(t, externalenv.MultiAgentOptions{})
	ctx := context.Background()
	_, err := e.StartEpisode("ep", true)
	require.NoError(t, err)
	require.NoError(t, e.LogAction("ep", obsMap{"p": o2(1), "q": o2(2)}, obsMap{"p": {0}, "q": {0}}))
	answerAll(t, e, maPoll(t, e))
	require.NoError(t, e.LogReturns("ep", map[env.AgentID]float64{"p": 1, "q": 2}, map[env.AgentID]bool{"q": true}, nil))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = e.GetAction(cctx, "ep", obsMap{"p": o2(3), "q": o2(4)})
	assert.ErrorIs(t, err, context.Canceled)
	require.NoError(t, e.LogReturns("ep", map[env.AgentID]float64{"p": 10}, nil, nil))
	res := maGetAction(ctx, e, "ep", obsMap{"p": o2(5)})
	b := maPoll(t, e)
	assert.Equal(t, []env.AgentObs{
		{Env: 0, Agent: "p", Obs: o2(5), Reward: 11},
		// q's final observation is the one of the call taken back (its last one given).
		{Env: 0, Agent: "q", Obs: o2(4), Reward: 2, Terminated: true},
	}, b.Agents)
	answerAll(t, e, b)
	r := <-res
	require.NoError(t, r.err)
	assert.Equal(t, obsMap{"p": {1}}, r.act)
}

// TestMultiAgentNoneActs: a GetAction whose agents are all done reports their final
// observations and returns an empty map without waiting.
func TestMultiAgentNoneActs(t *testing.T) {
	e := newMAEnv(t, externalenv.MultiAgentOptions{})
	_, err := e.StartEpisode("ep", true)
	require.NoError(t, err)
	require.NoError(t, e.LogAction("ep", obsMap{"p": o2(1)}, obsMap{"p": {1}}))
	b := maPoll(t, e)
	assert.Equal(t, []env.AgentObs{{Env: 0, Agent: "p", Obs: o2(1), OffPolicyAction: []float32{1}}}, b.Agents)
	answerAll(t, e, b)
	require.NoError(t, e.LogReturns("ep", nil, map[env.AgentID]bool{"p": true}, nil))
	acts, err := e.GetAction(context.Background(), "ep", obsMap{"p": o2(2)})
	require.NoError(t, err)
	assert.Empty(t, acts)
	b = maPoll(t, e)
	assert.Equal(t, []env.AgentObs{{Env: 0, Agent: "p", Obs: o2(2), Terminated: true}}, b.Agents)
	require.NoError(t, e.SendActions(nil))
}

// TestMultiAgentManyAgents: with more agents than the episode's small linear index holds,
// rows stay in id order and rewards with their agents.
func TestMultiAgentManyAgents(t *testing.T) {
	e := newMAEnv(t, externalenv.MultiAgentOptions{})
	_, err := e.StartEpisode("ep", true)
	require.NoError(t, err)
	obs, acts, rew := obsMap{}, obsMap{}, map[env.AgentID]float64{}
	for i := range 20 {
		id := fmt.Sprintf("agent%02d", 19-i)
		obs[id], acts[id], rew[id] = o2(float32(i)/4), []float32{float32(i % 3)}, float64(i)
	}
	require.NoError(t, e.LogAction("ep", obs, acts))
	b := maPoll(t, e)
	require.Len(t, b.Agents, 20)
	for k, a := range b.Agents {
		assert.Equal(t, []float32{float32((19 - k) % 3)}, a.OffPolicyAction, a.Agent)
	}
	answerAll(t, e, b)
	require.NoError(t, e.LogReturns("ep", rew, nil, nil))
	res := maGetAction(context.Background(), e, "ep", obs)
	b = maPoll(t, e)
	require.Len(t, b.Agents, 20)
	var sent []env.Action
	for k, a := range b.Agents {
		id := fmt.Sprintf("agent%02d", k)
		i := 19 - k
		assert.Equal(t, env.AgentObs{Env: 0, Agent: id, Obs: o2(float32(i) / 4), Reward: float64(i)}, a)
		sent = append(sent, env.Action{Env: 0, Agent: id, Action: []float32{float32(k % 3)}})
	}
	require.NoError(t, e.SendActions(sent))
	r := <-res
	require.NoError(t, r.err)
	require.Len(t, r.act, 20)
	for k := range 20 {
		assert.Equal(t, []float32{float32(k % 3)}, r.act[fmt.Sprintf("agent%02d", k)])
	}
}

// TestMultiAgentRunLoopEnds: a run loop that returns, fails or panics surfaces from Poll,
// after the observations it reported.
func TestMultiAgentRunLoopEnds(t *testing.T) {
	boom := errors.New("boom")
	for name, tc := range map[string]struct {
		run      func(context.Context, *externalenv.ExternalMultiAgentEnv) error
		err      error
		panicked bool
	}{
		"nil":   {run: func(context.Context, *externalenv.ExternalMultiAgentEnv) error { return nil }},
		"error": {run: func(context.Context, *externalenv.ExternalMultiAgentEnv) error { return boom }, err: boom},
		"panic": {run: func(context.Context, *externalenv.ExternalMultiAgentEnv) error { panic("bang") }, panicked: true},
		"after an end": {run: func(_ context.Context, e *externalenv.ExternalMultiAgentEnv) error {
			if _, err := e.StartEpisode("x", true); err != nil {
				return err
			}
			return e.EndEpisode("x", obsMap{"p": o2(1)})
		}},
	} {
		t.Run(name, func(t *testing.T) {
			e := newMAEnv(t, externalenv.MultiAgentOptions{})
			e.Start(context.Background(), tc.run)
			b := &env.Batch{}
			err := e.Poll(b)
			if name == "after an end" {
				require.NoError(t, err)
				require.Len(t, b.Agents, 1)
				err = e.Poll(b)
			}
			var rle *externalenv.RunLoopError
			require.ErrorAs(t, err, &rle)
			assert.Equal(t, tc.panicked, rle.Panicked)
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err)
			}
			if tc.panicked {
				assert.Contains(t, err.Error(), "bang")
			}
		})
	}
}

// TestMultiAgentStop: Stop releases a blocked GetAction (whose context is the run loop's)
// and a blocked Poll, and cancels the run loop; every later call returns ErrStopped.
func TestMultiAgentStop(t *testing.T) {
	e := newMAEnv(t, externalenv.MultiAgentOptions{Timeout: -1})
	got := make(chan error, 1)
	asked := make(chan struct{})
	e.Start(context.Background(), func(ctx context.Context, e *externalenv.ExternalMultiAgentEnv) error {
		if _, err := e.StartEpisode("a", true); err != nil {
			return err
		}
		close(asked)
		_, err := e.GetAction(ctx, "a", obsMap{"p": o2(0)})
		got <- err
		<-ctx.Done()
		return ctx.Err()
	})
	<-asked
	b := maPoll(t, e) // GetAction's observation is in flight: it waits for SendActions
	require.Len(t, b.Agents, 1)
	pollErr := make(chan error, 1)
	go func() { pollErr <- e.Poll(&env.Batch{}) }()
	require.NoError(t, e.Stop())
	require.ErrorIs(t, <-got, externalenv.ErrStopped)
	require.ErrorIs(t, <-pollErr, externalenv.ErrStopped)
	_, err := e.StartEpisode("b", true)
	require.ErrorIs(t, err, externalenv.ErrStopped)
	require.ErrorIs(t, e.LogReturns("a", nil, nil, nil), externalenv.ErrStopped)
	require.ErrorIs(t, e.SendActions(nil), externalenv.ErrStopped)
}

// TestMultiAgentRunContextCancelled: cancelling the context given to Start releases a
// GetAction waiting with the run loop's context (which it does not select on) with the
// context's error.
func TestMultiAgentRunContextCancelled(t *testing.T) {
	e := newMAEnv(t, externalenv.MultiAgentOptions{Timeout: -1})
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	e.Start(ctx, func(ctx context.Context, e *externalenv.ExternalMultiAgentEnv) error {
		if _, err := e.StartEpisode("a", true); err != nil {
			return err
		}
		_, err := e.GetAction(context.WithValue(ctx, struct{}{}, 1), "a", obsMap{"p": o2(0)})
		got <- err
		return err
	})
	b := maPoll(t, e)
	require.Len(t, b.Agents, 1)
	cancel()
	require.ErrorIs(t, <-got, context.Canceled)
	var rle *externalenv.RunLoopError
	require.ErrorAs(t, e.Poll(&env.Batch{}), &rle)
	assert.ErrorIs(t, rle, context.Canceled)
	// The answer to the observation that was in flight is dropped.
	require.NoError(t, e.SendActions([]env.Action{{Env: 0, Agent: "p", Action: []float32{1}}}))
}

func TestNewMultiAgentChecks(t *testing.T) {
	_, err := externalenv.NewMultiAgent(externalenv.MultiAgentOptions{})
	require.Error(t, err)
	_, err = externalenv.NewMultiAgent(externalenv.MultiAgentOptions{ObservationSpace: spaces.NewBox(0, 1, 2), ActionSpace: &spaces.Discrete{N: 0}})
	require.Error(t, err)
	_, err = externalenv.NewMultiAgent(externalenv.MultiAgentOptions{ObservationSpace: spaces.NewBox(0, 1, 2), ActionSpace: &spaces.Discrete{N: 2}, MaxWait: -1})
	require.Error(t, err)
	e, err := externalenv.NewMultiAgent(externalenv.MultiAgentOptions{ObservationSpace: spaces.NewBox(0, 1, 2), ActionSpace: &spaces.Discrete{N: 2}})
	require.NoError(t, err)
	assert.Equal(t, 100, e.NumEnvs())
	assert.Equal(t, spaces.NewBox(0, 1, 2), e.ObservationSpace())
	assert.Equal(t, &spaces.Discrete{N: 2}, e.ActionSpace())
	assert.Same(t, e, e.BaseEnv())
	async, err := e.TryReset(99, env.Seed{}, nil)
	require.NoError(t, err)
	assert.True(t, async)
	_, err = e.TryReset(100, env.Seed{}, nil)
	require.Error(t, err)
}

// TestMultiAgentGetActionAllocs: in steady state a multi-agent GetAction/LogReturns step
// allocates nothing besides the caller's own maps.
func TestMultiAgentGetActionAllocs(t *testing.T) {
	if underRace {
		t.Skip("the race detector's instrumentation allocates")
	}
	e := newMAEnv(t, externalenv.MultiAgentOptions{MaxConcurrentEpisodes: 4})
	go responder(e, 1)
	ctx := context.Background()
	id, err := e.StartEpisode("a", true)
	require.NoError(t, err)
	obs := obsMap{"p": o2(1), "q": o2(2), "r": o2(3)}
	rewards := map[env.AgentID]float64{"p": 1, "q": 2, "r": 3}
	step := func() {
		acts, err := e.GetAction(ctx, id, obs)
		if err != nil || len(acts) != 3 {
			t.Fatal(err, acts)
		}
		if err := e.LogReturns(id, rewards, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		step()
	}
	assert.Zero(t, testing.AllocsPerRun(1000, step))
}
