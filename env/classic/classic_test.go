package classic

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/spaces"
	"github.com/stretchr/testify/require"
)

var singleNames = []string{
	"CartPole-v1", "StatelessCartPole", "Pendulum-v1", "MountainCar-v0",
	"MountainCarContinuous-v0", "Acrobot-v1",
}

func mustMake(t testing.TB, name string, cfg env.Config) stateful {
	t.Helper()
	e, err := env.Make(name, cfg)
	require.NoError(t, err)
	return e.Value().(stateful)
}

func TestRegistered(t *testing.T) {
	names := env.Names()
	for _, n := range append(slices.Clone(singleNames), "MultiAgentCartPole") {
		require.Contains(t, names, n)
	}
	for _, n := range singleNames {
		e, err := env.Make(n, nil)
		require.NoError(t, err)
		require.NotNil(t, e.Env(), n)
		_, ok := e.Value().(env.Renderer)
		require.True(t, ok, n)
	}
	e, err := env.Make("MultiAgentCartPole", nil)
	require.NoError(t, err)
	require.NotNil(t, e.MultiAgent())
}

func inf32() float32 { return float32(math.Inf(1)) }

func TestSpaces(t *testing.T) {
	box := func(low, high []float32) spaces.Space { return spaces.NewBoxBounds(low, high) }
	thr := float32(0.41887903) // float32(2 * 12 * 2 * pi / 360)
	cases := []struct {
		name     string
		obs, act spaces.Space
	}{
		{"CartPole-v1",
			box([]float32{-4.8, -inf32(), -thr, -inf32()}, []float32{4.8, inf32(), thr, inf32()}),
			&spaces.Discrete{N: 2}},
		{"StatelessCartPole", box([]float32{-4.8, -thr}, []float32{4.8, thr}), &spaces.Discrete{N: 2}},
		{"Pendulum-v1", box([]float32{-1, -1, -8}, []float32{1, 1, 8}), spaces.NewBox(-2, 2, 1)},
		{"MountainCar-v0", box([]float32{-1.2, -0.07}, []float32{0.6, 0.07}), &spaces.Discrete{N: 3}},
		{"MountainCarContinuous-v0", box([]float32{-1.2, -0.07}, []float32{0.6, 0.07}), spaces.NewBox(-1, 1, 1)},
		{"Acrobot-v1",
			box([]float32{-1, -1, -1, -1, -12.566371, -28.274334}, []float32{1, 1, 1, 1, 12.566371, 28.274334}),
			&spaces.Discrete{N: 3}},
	}
	for _, c := range cases {
		e := mustMake(t, c.name, nil)
		require.True(t, spaces.Equal(c.obs, e.ObservationSpace()), "%s obs: %s", c.name, spaces.String(e.ObservationSpace()))
		require.True(t, spaces.Equal(c.act, e.ActionSpace()), "%s act: %s", c.name, spaces.String(e.ActionSpace()))
		require.NoError(t, e.ObservationSpace().Validate())
		require.Equal(t, "float32", e.ObservationSpace().(*spaces.Box).Dtype)
	}
	require.Equal(t, thr, float32(cpThetaThresh*2))
	require.Equal(t, 0.20943951023931953, cpThetaThresh) // Python: 12 * 2 * math.pi / 360
	require.Equal(t, 28.274333882308138, acMaxVel2)      // Python: 9 * math.pi

	m, err := NewMultiAgentCartPole(env.Config{"num_agents": 3})
	require.NoError(t, err)
	require.Equal(t, []env.AgentID{"agent_0", "agent_1", "agent_2"}, m.PossibleAgents())
	for _, id := range m.PossibleAgents() {
		require.True(t, spaces.Equal(cases[0].obs, m.ObservationSpace(id)))
		require.True(t, spaces.Equal(&spaces.Discrete{N: 2}, m.ActionSpace(id)))
	}
	require.Nil(t, m.ObservationSpace("agent_3"))
	require.Nil(t, m.ActionSpace("agent_01"))
	require.Nil(t, m.ActionSpace("0"))
}

func TestResetDistribution(t *testing.T) {
	type bounds struct{ low, high []float64 }
	cases := map[string]bounds{
		"CartPole-v1":              {[]float64{-.05, -.05, -.05, -.05}, []float64{.05, .05, .05, .05}},
		"StatelessCartPole":        {[]float64{-.05, -.05, -.05, -.05}, []float64{.05, .05, .05, .05}},
		"Pendulum-v1":              {[]float64{-math.Pi, -1}, []float64{math.Pi, 1}},
		"MountainCar-v0":           {[]float64{-0.6, 0}, []float64{-0.4, 0}},
		"MountainCarContinuous-v0": {[]float64{-0.6, 0}, []float64{-0.4, 0}},
		"Acrobot-v1":               {[]float64{-.1, -.1, -.1, -.1}, []float64{.1, .1, .1, .1}},
	}
	for name, b := range cases {
		e := mustMake(t, name, nil)
		obs := make([]float32, e.ObservationSpace().Size())
		lo := slices.Repeat([]float64{math.Inf(1)}, len(b.low))
		hi := slices.Repeat([]float64{math.Inf(-1)}, len(b.low))
		for seed := range uint64(2000) {
			_, err := e.Reset(env.WithSeed(seed), obs)
			require.NoError(t, err)
			require.Zero(t, e.ElapsedSteps())
			s := e.State()
			for i, v := range s {
				if b.low[i] == b.high[i] {
					require.Equal(t, b.low[i], v, "%s seed %d state[%d]", name, seed, i)
				} else {
					require.True(t, v >= float64(float32(b.low[i])) && v <= b.high[i], "%s seed %d state[%d] = %v", name, seed, i, v)
				}
				lo[i], hi[i] = min(lo[i], v), max(hi[i], v)
			}
			if name == "Acrobot-v1" { // rounded to float32, as gymnasium does
				for _, v := range s {
					require.Equal(t, float64(float32(v)), v)
				}
			}
			require.True(t, e.ObservationSpace().Contains(obs), "%s seed %d obs %v", name, seed, obs)
		}
		for i := range lo { // the draws cover the interval
			w := b.high[i] - b.low[i]
			require.LessOrEqual(t, lo[i]-b.low[i], 0.01*w, "%s state[%d] min", name, i)
			require.LessOrEqual(t, b.high[i]-hi[i], 0.01*w, "%s state[%d] max", name, i)
		}
	}
}

// rollout runs an episode with a fixed action sequence and returns its observations and
// rewards.
func rollout(t *testing.T, e env.Env, seed env.Seed, n int) ([]float32, []float64) {
	t.Helper()
	obs := make([]float32, e.ObservationSpace().Size())
	_, err := e.Reset(seed, obs)
	require.NoError(t, err)
	all := slices.Clone(obs)
	var rewards []float64
	act := make([]float32, e.ActionSpace().Size())
	for i := range n {
		if _, ok := e.ActionSpace().(*spaces.Discrete); ok {
			act[0] = float32(i % 2)
		} else {
			act[0] = float32(i%3) - 1
		}
		res, err := e.Step(act, obs)
		require.NoError(t, err)
		all = append(all, obs...)
		rewards = append(rewards, res.Reward)
		if res.Terminated || res.Truncated {
			break
		}
	}
	return all, rewards
}

func TestSeeding(t *testing.T) {
	for _, name := range singleNames {
		t.Run(name, func(t *testing.T) {
			a, b := mustMake(t, name, nil), mustMake(t, name, nil)
			oa, ra := rollout(t, a, env.WithSeed(7), 30)
			ob, rb := rollout(t, b, env.WithSeed(7), 30)
			require.Equal(t, oa, ob, "same seed, same trajectory")
			require.Equal(t, ra, rb)
			oc, _ := rollout(t, b, env.WithSeed(8), 30)
			require.NotEqual(t, oa[:4], oc[:4], "different seeds, different initial states")

			// A never-seeded environment starts from DefaultSeed, and unseeded resets go on
			// drawing from the stream.
			c, d := mustMake(t, name, nil), mustMake(t, name, nil)
			o1, _ := rollout(t, c, env.Seed{}, 5)
			o2, _ := rollout(t, d, env.WithSeed(DefaultSeed), 5)
			require.Equal(t, o1, o2)
			o3, _ := rollout(t, c, env.Seed{}, 5)
			require.NotEqual(t, o1[:2], o3[:2])
			// Reseeding restarts the stream.
			o4, _ := rollout(t, c, env.WithSeed(DefaultSeed), 5)
			require.Equal(t, o1, o4)
		})
	}
}

func TestInvalidActions(t *testing.T) {
	nan := float32(math.NaN())
	bad := map[string][][]float32{
		"CartPole-v1":              {{nan}, {2}, {-1}, {0.5}, {}, {0, 1}, nil, {inf32()}},
		"StatelessCartPole":        {{nan}, {2}, {-1}, {0.5}, {}, {0, 1}},
		"MountainCar-v0":           {{nan}, {3}, {-1}, {1.5}, {}, {1, 1}},
		"Acrobot-v1":               {{nan}, {3}, {-1}, {0.1}, {}, {1, 1}},
		"Pendulum-v1":              {{nan}, {}, {0, 0}, nil},
		"MountainCarContinuous-v0": {{nan}, {}, {0, 0}, nil},
	}
	for name, actions := range bad {
		e := mustMake(t, name, nil)
		obs := make([]float32, e.ObservationSpace().Size())
		_, err := e.Reset(env.WithSeed(1), obs)
		require.NoError(t, err)
		before, beforeObs := e.State(), slices.Clone(obs)
		for _, a := range actions {
			_, err := e.Step(a, obs)
			var ae *env.ActionError
			require.True(t, errors.As(err, &ae), "%s action %v: %v", name, a, err)
			require.Empty(t, ae.Agent)
			require.Equal(t, spaces.String(e.ActionSpace()), ae.Space)
			require.Equal(t, before, e.State(), "%s: a rejected action changes nothing", name)
			require.Equal(t, beforeObs, obs)
			require.Zero(t, e.ElapsedSteps())
		}
	}
}

func TestContinuousActionsAreClipped(t *testing.T) {
	for _, c := range []struct {
		name      string
		over, max float32
	}{
		{"Pendulum-v1", 5, 2},
		{"Pendulum-v1", inf32(), 2},
		{"MountainCarContinuous-v0", 3, 1},
		{"MountainCarContinuous-v0", -inf32(), -1},
	} {
		a, b := mustMake(t, c.name, nil), mustMake(t, c.name, nil)
		oa := make([]float32, a.ObservationSpace().Size())
		ob := slices.Clone(oa)
		_, err := a.Reset(env.WithSeed(3), oa)
		require.NoError(t, err)
		_, err = b.Reset(env.WithSeed(3), ob)
		require.NoError(t, err)
		ra, err := a.Step([]float32{c.over}, oa)
		require.NoError(t, err)
		rb, err := b.Step([]float32{c.max}, ob)
		require.NoError(t, err)
		require.Equal(t, b.State(), a.State(), "%s %v acts as %v", c.name, c.over, c.max)
		if c.name == "Pendulum-v1" {
			require.Equal(t, rb.Reward, ra.Reward) // the cost uses the clipped torque
		} else if !math.IsInf(float64(c.over), 0) {
			// gymnasium's MountainCarContinuous charges the unclipped action.
			require.InDelta(t, rb.Reward-0.1*(float64(c.over)*float64(c.over)-1), ra.Reward, 1e-12)
		}
	}
}

func TestNeedsReset(t *testing.T) {
	for _, name := range singleNames {
		e := mustMake(t, name, env.Config{"max_episode_steps": 3})
		obs := make([]float32, e.ObservationSpace().Size())
		act := make([]float32, e.ActionSpace().Size())
		_, err := e.Step(act, obs)
		require.ErrorIs(t, err, env.ErrNeedsReset, "%s before the first Reset", name)
		_, err = e.Reset(env.WithSeed(1), obs)
		require.NoError(t, err)
		for i := 1; i <= 3; i++ {
			res, err := e.Step(act, obs)
			require.NoError(t, err)
			require.Equal(t, i == 3, res.Truncated, "%s step %d", name, i)
			require.False(t, res.Terminated)
		}
		before := e.State()
		_, err = e.Step(act, obs)
		require.ErrorIs(t, err, env.ErrNeedsReset, "%s after truncation", name)
		require.Equal(t, before, e.State())
		require.NoError(t, e.SetState(before)) // SetState does not restart the episode
		_, err = e.Step(act, obs)
		require.ErrorIs(t, err, env.ErrNeedsReset)
		_, err = e.Reset(env.Seed{}, obs)
		require.NoError(t, err)
		_, err = e.Step(act, obs)
		require.NoError(t, err)
		require.Error(t, e.SetState([]float64{1}))
	}

	// After termination.
	c, err := NewCartPole(nil)
	require.NoError(t, err)
	obs := make([]float32, 4)
	_, err = c.Reset(env.WithSeed(1), obs)
	require.NoError(t, err)
	require.NoError(t, c.SetState([]float64{2.39, 1, 0, 0}))
	res, err := c.Step([]float32{1}, obs)
	require.NoError(t, err)
	require.True(t, res.Terminated)
	require.False(t, res.Truncated)
	require.Equal(t, 1.0, res.Reward) // the terminating step is rewarded too
	_, err = c.Step([]float32{1}, obs)
	require.ErrorIs(t, err, env.ErrNeedsReset)
}

func TestTimeLimits(t *testing.T) {
	defaults := map[string]int{
		"CartPole-v1": 500, "StatelessCartPole": 500, "Pendulum-v1": 200, "MountainCar-v0": 200,
		"MountainCarContinuous-v0": 999, "Acrobot-v1": 500,
	}
	for name, limit := range defaults {
		e := mustMake(t, name, nil)
		obs := make([]float32, e.ObservationSpace().Size())
		act := make([]float32, e.ActionSpace().Size())
		_, err := e.Reset(env.WithSeed(1), obs)
		require.NoError(t, err)
		steps := 0
		for {
			// Hold the state still so that nothing terminates (CartPole balanced at rest
			// never moves; the cars sit at the bottom; the acrobot hangs).
			switch name {
			case "MountainCar-v0", "MountainCarContinuous-v0":
				require.NoError(t, e.SetState([]float64{-math.Pi / 6, 0}))
				if name == "MountainCar-v0" {
					act[0] = 1
				}
			default:
				require.NoError(t, e.SetState(make([]float64, len(e.State()))))
			}
			res, err := e.Step(act, obs)
			require.NoError(t, err)
			steps++
			require.False(t, res.Terminated, name)
			if res.Truncated {
				break
			}
			require.Less(t, steps, limit, name)
		}
		require.Equal(t, limit, steps, name)
	}

	// 0 removes the limit.
	p := mustMake(t, "Pendulum-v1", env.Config{"max_episode_steps": "0"})
	obs := make([]float32, 3)
	_, err := p.Reset(env.WithSeed(1), obs)
	require.NoError(t, err)
	for range 5000 {
		res, err := p.Step([]float32{0.5}, obs)
		require.NoError(t, err)
		require.False(t, res.Truncated)
	}
}

func TestConfig(t *testing.T) {
	for _, name := range append(slices.Clone(singleNames), "MultiAgentCartPole") {
		_, err := env.Make(name, env.Config{"bogus": 1})
		require.ErrorContains(t, err, `"bogus"`, name)
		_, err = env.Make(name, env.Config{"max_episode_steps": -1})
		require.ErrorContains(t, err, "max_episode_steps", name)
		_, err = env.Make(name, env.Config{"max_episode_steps": "ten"})
		require.ErrorContains(t, err, "max_episode_steps", name)
	}
	_, err := env.Make("Pendulum-v1", env.Config{"g": "inf"})
	require.ErrorContains(t, err, "config g")
	_, err = env.Make("MountainCar-v0", env.Config{"goal_velocity": true})
	require.ErrorContains(t, err, "goal_velocity")
	_, err = env.Make("MultiAgentCartPole", env.Config{"num_agents": 0})
	require.ErrorContains(t, err, "num_agents")
	_, err = env.Make("CartPole-v1", env.Config{"sutton_barto_reward": "maybe"})
	require.ErrorContains(t, err, "sutton_barto_reward")

	// g changes the dynamics: a resting horizontal pendulum falls faster with more gravity.
	fall := func(g float64) float64 {
		e := mustMake(t, "Pendulum-v1", env.Config{"g": g})
		obs := make([]float32, 3)
		_, err := e.Reset(env.WithSeed(1), obs)
		require.NoError(t, err)
		require.NoError(t, e.SetState([]float64{math.Pi / 2, 0}))
		_, err = e.Step([]float32{0}, obs)
		require.NoError(t, err)
		return e.State()[1]
	}
	require.InDelta(t, 15*0.05, fall(10), 1e-12) // 3g/(2l) sin(pi/2) dt
	require.InDelta(t, 1.5*9.81*0.05, fall(9.81), 1e-12)

	// sutton_barto_reward: 0 per step, -1 on the terminating step.
	c, err := NewCartPole(env.Config{"sutton_barto_reward": true})
	require.NoError(t, err)
	obs := make([]float32, 4)
	_, err = c.Reset(env.WithSeed(1), obs)
	require.NoError(t, err)
	res, err := c.Step([]float32{0}, obs)
	require.NoError(t, err)
	require.Equal(t, 0.0, res.Reward)
	require.NoError(t, c.SetState([]float64{2.39, 1, 0, 0}))
	res, err = c.Step([]float32{0}, obs)
	require.NoError(t, err)
	require.True(t, res.Terminated)
	require.Equal(t, -1.0, res.Reward)

	// goal_velocity: the car must arrive fast enough.
	m, err := NewMountainCar(env.Config{"goal_velocity": 0.05})
	require.NoError(t, err)
	_, err = m.Reset(env.WithSeed(1), obs[:2])
	require.NoError(t, err)
	require.NoError(t, m.SetState([]float64{0.49, 0.02}))
	res, err = m.Step([]float32{2}, obs[:2])
	require.NoError(t, err)
	require.False(t, res.Terminated)
}

func TestStatelessCartPoleObservesPositions(t *testing.T) {
	full, err := NewCartPole(nil)
	require.NoError(t, err)
	sl, err := NewStatelessCartPole(nil)
	require.NoError(t, err)
	of, os := make([]float32, 4), make([]float32, 2)
	_, err = full.Reset(env.WithSeed(5), of)
	require.NoError(t, err)
	_, err = sl.Reset(env.WithSeed(5), os)
	require.NoError(t, err)
	for i := range 50 {
		require.Equal(t, []float32{of[0], of[2]}, os, "step %d", i)
		rf, err := full.Step([]float32{float32(i % 2)}, of)
		require.NoError(t, err)
		rs, err := sl.Step([]float32{float32(i % 2)}, os)
		require.NoError(t, err)
		require.Equal(t, rf, rs)
		if rf.Terminated {
			break
		}
	}
}

func TestObsLengthPanics(t *testing.T) {
	c, err := NewCartPole(nil)
	require.NoError(t, err)
	require.PanicsWithValue(t, "classic: CartPole-v1: len(obs) = 3, want 4 (ObservationSpace().Size())", func() {
		_, _ = c.Reset(env.Seed{}, make([]float32, 3))
	})
}

func TestRender(t *testing.T) {
	for _, name := range singleNames {
		e := mustMake(t, name, nil)
		obs := make([]float32, e.ObservationSpace().Size())
		_, err := e.Reset(env.WithSeed(1), obs)
		require.NoError(t, err)
		out, err := e.(env.Renderer).Render()
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(out.(string), name+" step=0 "), out)
	}
}

func TestMultiAgentCartPole(t *testing.T) {
	m, err := NewMultiAgentCartPole(env.Config{"num_agents": 3, "max_episode_steps": 40})
	require.NoError(t, err)
	var out env.MultiAgentStep
	require.ErrorIs(t, m.Step([]env.AgentAction{{ID: "agent_0", Action: []float32{0}}}, &out), env.ErrNeedsReset)
	require.NoError(t, m.Reset(env.WithSeed(100), &out))
	require.Len(t, out.Agents, 3)

	// Agent i's CartPole is seeded with seed+i.
	for i, a := range out.Agents {
		require.Equal(t, m.PossibleAgents()[i], a.ID)
		c, err := NewCartPole(nil)
		require.NoError(t, err)
		want := make([]float32, 4)
		_, err = c.Reset(env.WithSeed(100+uint64(i)), want)
		require.NoError(t, err)
		require.Equal(t, want, a.Obs)
	}

	// Agent 0 falls quickly (always pushed right from a tilted state), agent 1 a little later,
	// agent 2 is balanced until the time limit truncates it.
	require.NoError(t, m.Agent(0).SetState([]float64{0, 0, 0.2, 1})) // falls on step 1
	require.NoError(t, m.Agent(1).SetState([]float64{0, 0, -0.1, -0.3}))
	require.NoError(t, m.Agent(2).SetState([]float64{0, 0, 0, 0}))
	active := []env.AgentID{"agent_0", "agent_1", "agent_2"}
	var doneOrder []env.AgentID
	steps := 0
	for len(active) > 0 {
		acts := make([]env.AgentAction, 0, len(active))
		for _, id := range active {
			a := float32(1)
			if id == "agent_2" { // a balancing controller
				if st := m.Agent(2).State(); st[2]+0.5*st[3] < 0 {
					a = 0
				}
			} else if id == "agent_1" {
				a = 0
			}
			acts = append(acts, env.AgentAction{ID: id, Action: []float32{a}})
		}
		require.NoError(t, m.Step(acts, &out))
		steps++
		require.Len(t, out.Agents, len(active), "only the agents that acted report")
		var next []env.AgentID
		for i, a := range out.Agents {
			require.Equal(t, active[i], a.ID)
			require.Len(t, a.Obs, 4)
			require.Equal(t, 1.0, a.Reward)
			if a.Terminated || a.Truncated {
				doneOrder = append(doneOrder, a.ID)
			} else {
				next = append(next, a.ID)
			}
		}
		if len(next) > 0 {
			require.False(t, out.AllTerminated || out.AllTruncated, "step %d", steps)
		}
		active = next
		require.LessOrEqual(t, steps, 40)
	}
	require.Equal(t, []env.AgentID{"agent_0", "agent_1", "agent_2"}, doneOrder)
	require.Equal(t, 40, steps)
	require.True(t, out.AllTruncated, "agent_2 was truncated")
	require.False(t, out.AllTerminated)
	require.True(t, out.Agents[0].Truncated)
	require.ErrorIs(t, m.Step([]env.AgentAction{{ID: "agent_2", Action: []float32{0}}}, &out), env.ErrNeedsReset)

	// All terminated.
	require.NoError(t, m.Reset(env.Seed{}, &out))
	for i := range 3 {
		require.NoError(t, m.Agent(i).SetState([]float64{2.39, 1, 0, 0}))
	}
	all := []env.AgentAction{{ID: "agent_0", Action: []float32{1}}, {ID: "agent_1", Action: []float32{1}}, {ID: "agent_2", Action: []float32{1}}}
	require.NoError(t, m.Step(all, &out))
	require.True(t, out.AllTerminated)
	require.False(t, out.AllTruncated)
}

func TestMultiAgentCartPoleErrors(t *testing.T) {
	m, err := NewMultiAgentCartPole(nil)
	require.NoError(t, err)
	var out env.MultiAgentStep
	require.NoError(t, m.Reset(env.WithSeed(1), &out))
	s0, s1 := m.Agent(0).State(), m.Agent(1).State()
	act := func(id string, a float32) env.AgentAction { return env.AgentAction{ID: id, Action: []float32{a}} }
	for _, c := range []struct {
		acts []env.AgentAction
		msg  string
	}{
		{nil, "at least one agent"},
		{[]env.AgentAction{act("agent_2", 0)}, `unknown agent "agent_2"`},
		{[]env.AgentAction{act("agent_00", 0)}, "unknown agent"},
		{[]env.AgentAction{act("agent_0", 1), act("agent_0", 0)}, `two actions for agent "agent_0"`},
		{[]env.AgentAction{act("agent_0", 1), act("agent_1", 2)}, `of agent "agent_1" is not in the action space`},
	} {
		err := m.Step(c.acts, &out)
		require.ErrorContains(t, err, c.msg)
		require.Equal(t, s0, m.Agent(0).State(), "nothing changes")
		require.Equal(t, s1, m.Agent(1).State())
	}
	var ae *env.ActionError
	require.ErrorAs(t, m.Step([]env.AgentAction{act("agent_1", float32(math.NaN()))}, &out), &ae)
	require.Equal(t, "agent_1", ae.Agent)

	// A departed agent cannot act.
	require.NoError(t, m.Agent(0).SetState([]float64{2.39, 1, 0, 0}))
	require.NoError(t, m.Step([]env.AgentAction{act("agent_0", 1), act("agent_1", 1)}, &out))
	require.True(t, out.Find("agent_0").Terminated)
	require.False(t, out.AllTerminated)
	require.ErrorContains(t, m.Step([]env.AgentAction{act("agent_0", 1)}, &out), `agent "agent_0" is done`)
	// A subset of the active agents may act.
	require.NoError(t, m.Step([]env.AgentAction{act("agent_1", 1)}, &out))
	require.Len(t, out.Agents, 1)

	r, err := m.Render()
	require.NoError(t, err)
	require.Contains(t, r.(string), "agent_0 (done)")
	require.Contains(t, r.(string), "agent_1 (active)")
}

func TestNoAllocs(t *testing.T) {
	for _, name := range singleNames {
		e := mustMake(t, name, env.Config{"max_episode_steps": 0})
		obs := make([]float32, e.ObservationSpace().Size())
		act := make([]float32, e.ActionSpace().Size())
		_, err := e.Reset(env.WithSeed(1), obs)
		require.NoError(t, err)
		var stepErr error
		steps := testing.AllocsPerRun(1000, func() {
			res, err := e.Step(act, obs)
			if err != nil {
				stepErr = err
			}
			if res.Terminated {
				_, stepErr = e.Reset(env.Seed{}, obs)
			}
		})
		require.NoError(t, stepErr)
		require.Zero(t, steps, "%s Step allocs", name)
		resets := testing.AllocsPerRun(1000, func() { _, _ = e.Reset(env.WithSeed(3), obs) })
		require.Zero(t, resets, "%s Reset allocs", name)
	}

	m, err := NewMultiAgentCartPole(env.Config{"num_agents": 4})
	require.NoError(t, err)
	var out env.MultiAgentStep
	require.NoError(t, m.Reset(env.WithSeed(1), &out))
	acts := make([]env.AgentAction, 4)
	for i, id := range m.PossibleAgents() {
		acts[i] = env.AgentAction{ID: id, Action: []float32{float32(i % 2)}}
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := m.Step(acts, &out); err != nil {
			_ = m.Reset(env.Seed{}, &out)
			return
		}
		if out.AllTerminated || out.AllTruncated || len(out.Agents) < 4 {
			_ = m.Reset(env.Seed{}, &out)
		}
	})
	require.Zero(t, allocs, "MultiAgentCartPole Step/Reset allocs")
}
