package externalenv_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/externalenv"
)

// answer answers every observation of b that is not final with action 0 (the sampler's; dropped for logged
// observations).
func answer(tb testing.TB, e env.BaseEnv, b *env.Batch) {
	tb.Helper()
	var acts []env.Action
	for _, a := range b.Agents {
		if !a.Terminated && !a.Truncated {
			acts = append(acts, env.Action{Env: a.Env, Agent: a.Agent, Action: []float32{0}})
		}
	}
	require.NoError(tb, e.SendActions(acts))
}

// TestLogActionWithItsObservation: a logged action is reported as OffPolicyAction with the
// observation it was taken at (RLlib's off_policy_actions), the episode's first included;
// the next observation carries none.
func TestLogActionWithItsObservation(t *testing.T) {
	e := newEnv(t, externalenv.Options{})
	_, err := e.StartEpisode("a", true)
	require.NoError(t, err)
	require.NoError(t, e.LogAction("a", obsOf(0.1), []float32{1}))
	b := poll(t, e)
	assert.Equal(t, []env.AgentObs{{Env: 0, Agent: env.DefaultAgentID, Obs: obsOf(0.1), OffPolicyAction: []float32{1}}}, b.Agents)
	assert.Equal(t, []env.EnvStatus{{Env: 0, Reset: true}}, b.Envs)
	answer(t, e, b)
	res := getAction(context.Background(), e, "a", obsOf(0.2))
	b = poll(t, e)
	assert.Equal(t, []env.AgentObs{{Env: 0, Agent: env.DefaultAgentID, Obs: obsOf(0.2)}}, b.Agents)
	answer(t, e, b)
	require.NoError(t, (<-res).err)

	m := newMAEnv(t, externalenv.MultiAgentOptions{})
	_, err = m.StartEpisode("m", true)
	require.NoError(t, err)
	require.NoError(t, m.LogAction("m", obsMap{"p": o2(1), "q": o2(2)}, obsMap{"p": {2}, "q": {1}}))
	b = maPoll(t, m)
	assert.Equal(t, []env.AgentObs{
		{Env: 0, Agent: "p", Obs: o2(1), OffPolicyAction: []float32{2}},
		{Env: 0, Agent: "q", Obs: o2(2), OffPolicyAction: []float32{1}},
	}, b.Agents)
	answer(t, m, b)
	require.NoError(t, m.EndEpisode("m", obsMap{"p": o2(3), "q": o2(4)}))
	b = maPoll(t, m)
	for _, a := range b.Agents {
		assert.Nil(t, a.OffPolicyAction, a.Agent)
	}
}

// TestEpisodeIDOfSubEnvironment: EpisodeID (env.EpisodeIDer) names the external episode of
// each sub-environment after the Poll that reported its first observation, and the slot's
// next episode once that one is reported.
func TestEpisodeIDOfSubEnvironment(t *testing.T) {
	e := newEnv(t, externalenv.Options{MaxConcurrentEpisodes: 2})
	var _ env.EpisodeIDer = e
	var _ env.EpisodeIDer = newMAEnv(t, externalenv.MultiAgentOptions{})
	assert.Equal(t, "", e.EpisodeID(0))
	ids := map[float32]string{0.1: "x", 0.2: "y"}
	for v, id := range ids {
		_, err := e.StartEpisode(id, true)
		require.NoError(t, err)
		require.NoError(t, e.LogAction(id, obsOf(v), []float32{0}))
	}
	b := poll(t, e)
	require.Len(t, b.Agents, 2)
	require.NotEqual(t, b.Agents[0].Env, b.Agents[1].Env)
	for _, a := range b.Agents {
		assert.Equal(t, ids[a.Obs[0]], e.EpisodeID(a.Env))
	}
	answer(t, e, b)
	require.NoError(t, e.EndEpisode("x", obsOf(0.2)))
	b = poll(t, e)
	slot := b.Agents[0].Env
	assert.Equal(t, "x", e.EpisodeID(slot)) // its end was just reported
	_, err := e.StartEpisode("z", true)
	require.NoError(t, err)
	require.NoError(t, e.LogAction("z", obsOf(0.3), []float32{0}))
	b = poll(t, e)
	require.Len(t, b.Agents, 1)
	assert.Equal(t, slot, b.Agents[0].Env) // the slot is reused
	assert.Equal(t, "z", e.EpisodeID(slot))
	assert.Equal(t, "", e.EpisodeID(-1))
	assert.Equal(t, "", e.EpisodeID(2))
}

// TestInfoStaysUntilReplaced: an info given to LogReturns is reported with every later
// observation of the episode (agent) until another replaces it (RLlib's cur_info).
func TestInfoStaysUntilReplaced(t *testing.T) {
	e := newEnv(t, externalenv.Options{})
	_, err := e.StartEpisode("a", true)
	require.NoError(t, err)
	infos := []env.Info{}
	step := func() {
		require.NoError(t, e.LogAction("a", obsOf(0.1), []float32{0}))
		b := poll(t, e)
		infos = append(infos, b.Agents[0].Info)
		answer(t, e, b)
	}
	step()
	require.NoError(t, e.LogReturns("a", 1, env.Info{"k": 1}))
	step()
	require.NoError(t, e.LogReturns("a", 1, nil)) // nil keeps it
	step()
	step()
	require.NoError(t, e.LogReturns("a", 1, env.Info{"k": 2}))
	step()
	assert.Equal(t, []env.Info{nil, {"k": 1}, {"k": 1}, {"k": 1}, {"k": 2}}, infos)

	m := newMAEnv(t, externalenv.MultiAgentOptions{})
	_, err = m.StartEpisode("m", true)
	require.NoError(t, err)
	require.NoError(t, m.LogReturns("m", nil, nil, env.Info{"p": env.Info{"k": 1}}))
	for range 2 {
		require.NoError(t, m.LogAction("m", obsMap{"p": o2(1), "q": o2(2)}, obsMap{"p": {0}, "q": {0}}))
		b := maPoll(t, m)
		assert.Equal(t, env.Info{"k": 1}, b.Agents[0].Info)
		assert.Nil(t, b.Agents[1].Info)
		answer(t, m, b)
	}
}

// TestLogActionBackPressure: a simulator that logs faster than the sampler polls blocks
// once MaxPendingLogs logged observations wait for the sampler, and every logged
// observation arrives, in order, with its action.
func TestLogActionBackPressure(t *testing.T) {
	for _, bound := range []int{0, 3} {
		e := newEnv(t, externalenv.Options{MaxPendingLogs: bound})
		_, err := e.StartEpisode("a", true)
		require.NoError(t, err)
		const n = 40
		var logged [n]chan struct{}
		for i := range logged {
			logged[i] = make(chan struct{})
		}
		errs := make(chan error, 1)
		go func() {
			for i := range n {
				if err := e.LogAction("a", obsOf(float32(i)/100), []float32{float32(i % 2)}); err != nil {
					errs <- err
					return
				}
				close(logged[i])
			}
			errs <- nil
		}()
		want := max(bound, 1)
		for i := range n {
			// LogAction i+want waits until the sampler answers observation i.
			if j := i + want; j < n {
				select {
				case <-logged[j]:
					t.Fatalf("bound %d: LogAction %d returned before observation %d was answered", bound, j, i)
				case <-time.After(20 * time.Millisecond):
				}
			}
			b := poll(t, e)
			require.Len(t, b.Agents, 1)
			assert.Equal(t, obsOf(float32(i)/100), b.Agents[0].Obs, "bound %d: observation %d", bound, i)
			assert.Equal(t, []float32{float32(i % 2)}, b.Agents[0].OffPolicyAction, "bound %d: action %d", bound, i)
			answer(t, e, b)
		}
		require.NoError(t, <-errs)
	}
}

// TestLogActionBackPressureGivesUp: a LogAction blocked for room gives up with ErrTimeout
// after Timeout, recording nothing, and with ErrStopped on Stop.
func TestLogActionBackPressureGivesUp(t *testing.T) {
	e := newEnv(t, externalenv.Options{Timeout: 30 * time.Millisecond})
	_, err := e.StartEpisode("a", true)
	require.NoError(t, err)
	require.NoError(t, e.LogAction("a", obsOf(0.1), []float32{1}))
	assert.ErrorIs(t, e.LogAction("a", obsOf(0.2), []float32{0}), externalenv.ErrTimeout)
	b := poll(t, e)
	assert.Equal(t, []env.AgentObs{{Env: 0, Agent: env.DefaultAgentID, Obs: obsOf(0.1), OffPolicyAction: []float32{1}}}, b.Agents)
	answer(t, e, b)
	require.NoError(t, e.LogAction("a", obsOf(0.3), []float32{0})) // room again
	b = poll(t, e)
	assert.Equal(t, obsOf(0.3), b.Agents[0].Obs) // 0.2 was not recorded

	// Without a timeout, a LogAction blocked for room waits until Stop.
	e = newEnv(t, externalenv.Options{Timeout: -1})
	_, err = e.StartEpisode("a", true)
	require.NoError(t, err)
	require.NoError(t, e.LogAction("a", obsOf(0.3), []float32{0}))
	done := make(chan error, 1)
	go func() { done <- e.LogAction("a", obsOf(0.4), []float32{0}) }()
	select {
	case err := <-done:
		t.Fatalf("LogAction returned %v while the bound was reached", err)
	case <-time.After(5 * time.Millisecond):
	}
	require.NoError(t, e.Stop())
	assert.ErrorIs(t, <-done, externalenv.ErrStopped)
}

// TestLogActionBackPressureConcurrent: several goroutines logging on one episode all get
// room in turn (none is left waiting while there is room), and every observation arrives
// exactly once.
func TestLogActionBackPressureConcurrent(t *testing.T) {
	e := newEnv(t, externalenv.Options{MaxPendingLogs: 2, Timeout: -1})
	_, err := e.StartEpisode("a", true)
	require.NoError(t, err)
	const producers, each = 3, 20
	errs := make(chan error, producers)
	for p := range producers {
		go func() {
			for i := range each {
				if err := e.LogAction("a", obsOf(float32(p*100+i)/1000), []float32{float32(p % 2)}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	seen := map[float32]bool{}
	for len(seen) < producers*each {
		b := poll(t, e)
		require.Len(t, b.Agents, 1)
		v := b.Agents[0].Obs[0]
		require.False(t, seen[v], "observation %v twice", v)
		seen[v] = true
		answer(t, e, b)
	}
	for range producers {
		require.NoError(t, <-errs)
	}
}
