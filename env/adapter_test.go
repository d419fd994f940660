package env

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/onnxrl/sampler/spaces"
)

func TestBaseEnvManyEpisodes(t *testing.T) {
	cfg := RandomEnvConfig{MinEpisodeLen: 1, MaxEpisodeLen: 7, RewardIsStep: true, PTerminated: 0.05, Seed: 3}
	b, err := NewBaseEnv(randomMaker(cfg), BaseEnvOptions{NumEnvs: 5, Seed: WithSeed(10)})
	if err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, b, 5)
	d.round()
	if d.resets != 5 || len(d.batch.Agents) != 5 {
		t.Fatalf("first Poll: %d resets, %d agents; want 5 and 5", d.resets, len(d.batch.Agents))
	}
	for i, a := range d.batch.Agents {
		if a.Env != i || a.Agent != DefaultAgentID || len(a.Obs) != 4 {
			t.Fatalf("first Poll agent %d: %+v", i, a)
		}
	}
	for range 2000 {
		d.round()
	}
	d.drain()
	subs := b.(SubEnvironmentser).SubEnvironments()
	if got := envSteps(t, subs); got != int64(d.steps) {
		t.Fatalf("env side counted %d steps, poll side %d", got, d.steps)
	}
	var resets int64
	for _, s := range subs {
		resets += s.(*RandomEnv).Resets()
	}
	if resets != int64(d.resets) || d.episodes < 300 || d.resets < d.episodes {
		t.Fatalf("resets: env side %d, poll side %d; episodes %d", resets, d.resets, d.episodes)
	}
	if s, err := b.(TryRenderer).TryRender(2); err != nil || !strings.HasPrefix(s.(string), "RandomEnv") {
		t.Fatalf("TryRender: %v, %v", s, err)
	}
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := b.Poll(&d.batch); !errors.Is(err, ErrStopped) {
		t.Fatalf("Poll after Stop: %v", err)
	}
}

func TestBaseEnvPassesThroughFlags(t *testing.T) {
	b, err := NewBaseEnv(randomMaker(RandomEnvConfig{EpisodeLen: 3, Reward: 2.5}), BaseEnvOptions{NumEnvs: 2})
	if err != nil {
		t.Fatal(err)
	}
	var batch Batch
	act := []Action{{Env: 0, Agent: DefaultAgentID, Action: []float32{1}}, {Env: 1, Agent: DefaultAgentID, Action: []float32{0}}}
	for step := range 4 {
		batch.Clear()
		if err := b.Poll(&batch); err != nil {
			t.Fatal(err)
		}
		if len(batch.Agents) != 2 || len(batch.Envs) != 2 {
			t.Fatalf("step %d: %d agents, %d envs", step, len(batch.Agents), len(batch.Envs))
		}
		for k, a := range batch.Agents {
			st := batch.Envs[k]
			wantReward := 2.5
			if step == 0 {
				wantReward = 0
			}
			if a.Reward != wantReward || a.Truncated != (step == 3) || a.Terminated || st.Truncated != (step == 3) || st.Reset != (step == 0) {
				t.Fatalf("step %d env %d: %+v %+v", step, k, a, st)
			}
		}
		if step < 3 {
			if err := b.SendActions(act); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The episodes ended: sending actions is ErrNeedsReset; TryReset starts new ones.
	if err := b.SendActions(act); !errors.Is(err, ErrNeedsReset) || !strings.Contains(err.Error(), "sub-environment 0") {
		t.Fatalf("action after the end: %v", err)
	}
	batch.Clear()
	if async, err := b.TryReset(1, WithSeed(5), &batch); err != nil || async || len(batch.Agents) != 1 || !batch.Envs[0].Reset {
		t.Fatalf("TryReset: %v %v %+v", async, err, batch)
	}
	// Env 0 is still ended; env 1 wants an action.
	if err := b.SendActions(act[1:]); err != nil {
		t.Fatal(err)
	}
	batch.Clear()
	if err := b.Poll(&batch); err != nil || len(batch.Agents) != 1 || batch.Agents[0].Env != 1 || batch.Envs[0].Reset {
		t.Fatalf("Poll after reset and step: %v %+v", err, batch)
	}
}

func TestBaseEnvBadActions(t *testing.T) {
	b, err := NewBaseEnv(randomMaker(RandomEnvConfig{EpisodeLen: 100}), BaseEnvOptions{NumEnvs: 3})
	if err != nil {
		t.Fatal(err)
	}
	var batch Batch
	if err := b.SendActions([]Action{{Env: 0, Agent: DefaultAgentID, Action: []float32{0}}}); !errors.Is(err, ErrBadActions) {
		t.Fatalf("before the first Poll: %v", err)
	}
	if err := b.Poll(&batch); err != nil {
		t.Fatal(err)
	}
	good := func() []Action {
		return []Action{
			{Env: 0, Agent: DefaultAgentID, Action: []float32{0}},
			{Env: 1, Agent: DefaultAgentID, Action: []float32{1}},
			{Env: 2, Agent: DefaultAgentID, Action: []float32{0}},
		}
	}
	cases := []struct {
		name    string
		actions []Action
		is      error
		want    string
	}{
		{"missing", good()[:2], ErrBadActions, `no action for agent "agent0" of sub-environment 2`},
		{"duplicate", append(good(), Action{Env: 1, Agent: DefaultAgentID, Action: []float32{0}}), ErrBadActions, `two actions for agent "agent0" of sub-environment 1`},
		{"unknown env", append(good(), Action{Env: 7, Agent: DefaultAgentID, Action: []float32{0}}), ErrBadActions, "unknown sub-environment 7"},
		{"negative env", append(good(), Action{Env: -1, Agent: DefaultAgentID, Action: []float32{0}}), ErrBadActions, "unknown sub-environment -1"},
		{"unknown agent", append(good(), Action{Env: 1, Agent: "bob", Action: []float32{0}}), ErrBadActions, `agent "bob" of sub-environment 1`},
		{"invalid action", slices.Concat(good()[:1], []Action{{Env: 1, Agent: DefaultAgentID, Action: []float32{2}}}, good()[2:]), nil, "sub-environment 1: env: action [2] of agent \"agent0\" is not in the action space Discrete(2)"},
		{"wrong length", slices.Concat(good()[:1], []Action{{Env: 1, Agent: DefaultAgentID, Action: []float32{1, 0}}}, good()[2:]), nil, "not in the action space"},
	}
	for _, c := range cases {
		err := b.SendActions(c.actions)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Fatalf("%s: %v is not %v", c.name, err, c.is)
		}
		if c.is == nil {
			var ae *ActionError
			if !errors.As(err, &ae) {
				t.Fatalf("%s: %v is not an *ActionError", c.name, err)
			}
		}
	}
	// Nothing was stepped by the bad calls.
	if n := envSteps(t, b.(SubEnvironmentser).SubEnvironments()); n != 0 {
		t.Fatalf("bad SendActions stepped %d times", n)
	}
	if err := b.SendActions(good()); err != nil {
		t.Fatal(err)
	}
	// Stepped, not polled yet: actions are refused.
	if err := b.SendActions(good()); !errors.Is(err, ErrBadActions) || !strings.Contains(err.Error(), "not polled") {
		t.Fatalf("send twice: %v", err)
	}
	batch.Clear()
	if err := b.Poll(&batch); err != nil || len(batch.Agents) != 3 {
		t.Fatalf("Poll: %v, %d agents", err, len(batch.Agents))
	}
	if _, err := b.TryReset(3, Seed{}, &batch); err == nil {
		t.Fatal("TryReset of an unknown env succeeded")
	}
}

func TestBaseEnvSeeds(t *testing.T) {
	cfg := RandomEnvConfig{EpisodeLen: 5, Seed: 99}
	first := func(seed uint64) [][]float32 {
		b, err := NewBaseEnv(randomMaker(cfg), BaseEnvOptions{NumEnvs: 3, Seed: WithSeed(seed)})
		if err != nil {
			t.Fatal(err)
		}
		var batch Batch
		if err := b.Poll(&batch); err != nil {
			t.Fatal(err)
		}
		var out [][]float32
		for _, a := range batch.Agents {
			out = append(out, slices.Clone(a.Obs))
		}
		return out
	}
	a, b := first(7), first(7)
	if !slices.EqualFunc(a, b, slices.Equal) {
		t.Fatalf("same seed, different observations: %v %v", a, b)
	}
	for i := range 3 {
		e, _ := NewRandomEnv(cfg)
		obs := make([]float32, 4)
		e.Reset(WithSeed(7+uint64(i)), obs)
		if !slices.Equal(obs, a[i]) {
			t.Fatalf("sub-env %d not seeded with seed+%d: %v vs %v", i, i, a[i], obs)
		}
	}
	if c := first(8); slices.Equal(c[0], a[0]) {
		t.Fatal("different seeds, same observation")
	}
}

func TestMultiAgentBaseEnv(t *testing.T) {
	cfg := RandomMultiAgentEnvConfig{
		RandomEnvConfig: RandomEnvConfig{MinEpisodeLen: 2, MaxEpisodeLen: 6, RewardIsStep: true, Seed: 1},
		NumAgents:       4, JoinEvery: 2,
	}
	b, err := NewMultiAgentBaseEnv(func(int) (MultiAgentEnv, error) { return NewRandomMultiAgentEnv(cfg) }, BaseEnvOptions{NumEnvs: 3, Seed: WithSeed(4)})
	if err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, b, 3)
	joined, left, allEnds := 0, 0, 0
	for range 600 {
		d.round()
		perEnvAgents := map[int]int{}
		for _, a := range d.batch.Agents {
			perEnvAgents[a.Env]++
			if a.Reward == 0 && !d.isReset(a.Env) {
				joined++ // an agent that appeared during the episode
			}
			if a.Truncated || a.Terminated {
				left++
			}
		}
		for _, st := range d.batch.Envs {
			if st.Terminated || st.Truncated {
				allEnds++
				// __all__: every agent reported on that step is done, and it needs a reset.
				for _, a := range d.batch.Agents {
					if a.Env == st.Env && !a.Terminated && !a.Truncated {
						t.Fatalf("agent %q of ended env %d not done", a.Agent, a.Env)
					}
				}
			}
		}
	}
	if joined == 0 || left == 0 || allEnds < 20 {
		t.Fatalf("joined %d, left %d, episodes %d", joined, left, allEnds)
	}

	// An agent that left may not act; one that was never there neither.
	b2, _ := NewMultiAgentBaseEnv(func(int) (MultiAgentEnv, error) {
		return NewRandomMultiAgentEnv(RandomMultiAgentEnvConfig{RandomEnvConfig: RandomEnvConfig{EpisodeLen: 3}, NumAgents: 2, JoinEvery: 1})
	}, BaseEnvOptions{})
	var batch Batch
	b2.Poll(&batch)
	if len(batch.Agents) != 1 || batch.Agents[0].Agent != "agent0" {
		t.Fatalf("reset reports %+v, want agent0 only", batch.Agents)
	}
	if err := b2.SendActions([]Action{{Env: 0, Agent: "agent1", Action: []float32{0}}}); !errors.Is(err, ErrBadActions) {
		t.Fatalf("action for an agent that has not appeared: %v", err)
	}
	send := func(ids ...AgentID) {
		t.Helper()
		var acts []Action
		for _, id := range ids {
			acts = append(acts, Action{Agent: id, Action: []float32{1}})
		}
		if err := b2.SendActions(acts); err != nil {
			t.Fatal(err)
		}
		batch.Clear()
		if err := b2.Poll(&batch); err != nil {
			t.Fatal(err)
		}
	}
	send("agent0") // step 1: agent1 appears
	if len(batch.Agents) != 2 || batch.Agents[1].Agent != "agent1" || batch.Agents[1].Reward != 0 {
		t.Fatalf("step 1: %+v", batch.Agents)
	}
	send("agent0", "agent1")
	send("agent0", "agent1") // step 3: agent0 leaves
	if !batch.Agents[0].Truncated || batch.Agents[1].Truncated || batch.Envs[0].Truncated {
		t.Fatalf("step 3: %+v %+v", batch.Agents, batch.Envs)
	}
	if err := b2.SendActions([]Action{{Agent: "agent0", Action: []float32{1}}, {Agent: "agent1", Action: []float32{1}}}); !errors.Is(err, ErrBadActions) {
		t.Fatalf("action for an agent that left: %v", err)
	}
	send("agent1") // step 4: agent1 leaves, __all__
	if len(batch.Agents) != 1 || !batch.Agents[0].Truncated || !batch.Envs[0].Truncated {
		t.Fatalf("step 4: %+v %+v", batch.Agents, batch.Envs)
	}
	if err := b2.SendActions([]Action{{Agent: "agent1", Action: []float32{1}}}); !errors.Is(err, ErrNeedsReset) {
		t.Fatalf("action after __all__: %v", err)
	}
}

func (d *driver) isReset(env int) bool {
	for _, st := range d.batch.Envs {
		if st.Env == env && st.Reset {
			return true
		}
	}
	for _, st := range d.rbatch.Envs {
		if st.Env == env && st.Reset {
			return true
		}
	}
	return false
}

func TestVectorEnv(t *testing.T) {
	v, err := NewVectorEnv(randomMaker(RandomEnvConfig{EpisodeLen: 2, Reward: 1}), 3)
	if err != nil {
		t.Fatal(err)
	}
	obs, act, res := make([]float32, 12), make([]float32, 3), make([]StepResult, 3)
	if err := v.Step(act, obs, res); !errors.Is(err, ErrNeedsReset) {
		t.Fatalf("step before reset: %v", err)
	}
	for i := range 3 {
		if _, err := v.ResetAt(i, WithSeed(uint64(i)), obs[i*4:i*4+4]); err != nil {
			t.Fatal(err)
		}
	}
	act[1] = 5
	if err = v.Step(act, obs, res); err == nil || !strings.Contains(err.Error(), "sub-environment 1") {
		t.Fatalf("bad action: %v", err)
	}
	var ae *ActionError
	if !errors.As(err, &ae) {
		t.Fatalf("bad action is not an *ActionError: %v", err)
	}
	act[1] = 1
	for step := 1; step <= 2; step++ {
		if err := v.Step(act, obs, res); err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.Reward != 1 || r.Truncated != (step == 2) {
				t.Fatalf("step %d env %d: %+v", step, i, r)
			}
		}
	}
	// No autoreset: the next Step fails until ResetAt.
	if err := v.Step(act, obs, res); !errors.Is(err, ErrNeedsReset) || !strings.Contains(err.Error(), "sub-environment 0") {
		t.Fatalf("no autoreset: %v", err)
	}
	if n := len(v.SubEnvironments()); n != 3 {
		t.Fatalf("SubEnvironments: %d", n)
	}
	if _, err := NewVectorEnv(func(i int) (Env, error) {
		return NewRandomEnv(RandomEnvConfig{ActionSpace: &spaces.Discrete{N: int64(2 + i)}})
	}, 2); err == nil || !strings.Contains(err.Error(), "sub-environment 1 has spaces") {
		t.Fatalf("mixed spaces: %v", err)
	}
}

func TestVectorBaseEnv(t *testing.T) {
	v, err := NewVectorEnv(randomMaker(RandomEnvConfig{MinEpisodeLen: 1, MaxEpisodeLen: 5, RewardIsStep: true}), 4)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewVectorBaseEnv(v, BaseEnvOptions{Seed: WithSeed(1)})
	if err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, b, 4)
	for range 500 {
		d.round()
	}
	d.drain()
	if got := envSteps(t, b.(SubEnvironmentser).SubEnvironments()); got != int64(d.steps) || d.episodes < 100 {
		t.Fatalf("env side %d steps, poll side %d, %d episodes", got, d.steps, d.episodes)
	}
	// An ended env that is not reset blocks the whole VectorEnv step.
	v, _ = NewVectorEnv(randomMaker(RandomEnvConfig{MinEpisodeLen: 1, MaxEpisodeLen: 5}), 4)
	b, _ = NewVectorBaseEnv(v, BaseEnvOptions{})
	var batch Batch
	for {
		batch.Clear()
		acts := []Action{}
		if err := b.Poll(&batch); err != nil {
			t.Fatal(err)
		}
		ended := -1
		for _, a := range batch.Agents {
			if a.Truncated {
				ended = a.Env
			} else {
				acts = append(acts, Action{Env: a.Env, Agent: a.Agent, Action: []float32{0}})
			}
		}
		if ended >= 0 {
			err := b.SendActions(acts)
			if !errors.Is(err, ErrNeedsReset) || !strings.Contains(err.Error(), "TryReset") {
				t.Fatalf("SendActions with env %d ended: %v", ended, err)
			}
			break
		}
		if err := b.SendActions(acts); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := NewVectorBaseEnv(v, BaseEnvOptions{NumEnvs: 3}); err == nil {
		t.Fatal("NumEnvs mismatch accepted")
	}
}

func TestToBaseEnvAndRegistry(t *testing.T) {
	if !slices.Contains(Names(), "RandomEnv") || !slices.Contains(Names(), "RandomMultiAgentEnv") {
		t.Fatalf("registry: %v", Names())
	}
	c := Config{"episode_len": "4", "reward": 2.0, "seed": 3.0, "step_delay": "0ms",
		"observation_space": map[string]any{"type": "Box", "low": 0.0, "high": 1.0, "shape": []any{2.0}},
		"action_space":      `{"type":"Discrete","n":3}`}
	b, err := ToBaseEnv(func(int) (any, error) { return Make("RandomEnv", c) }, BaseEnvOptions{NumEnvs: 2})
	if err != nil {
		t.Fatal(err)
	}
	var batch Batch
	if err := b.Poll(&batch); err != nil || len(batch.Agents) != 2 || len(batch.Agents[1].Obs) != 2 {
		t.Fatalf("Poll: %v %+v", err, batch)
	}
	if err := b.SendActions([]Action{{Env: 0, Agent: DefaultAgentID, Action: []float32{2}}, {Env: 1, Agent: DefaultAgentID, Action: []float32{3}}}); err == nil {
		t.Fatal("action 3 in Discrete(3) accepted")
	}
	if _, err := Make("RandomEnv", Config{"episode_lenn": 3}); err == nil || !strings.Contains(err.Error(), "episode_lenn") {
		t.Fatalf("unknown key: %v", err)
	}
	if _, err := Make("RandomEnv", Config{"action_space": `{"type":"Discrete","n":0}`}); err == nil {
		t.Fatal("invalid space accepted")
	}
	ma, err := ToBaseEnv(func(int) (any, error) {
		return Make("RandomMultiAgentEnv", Config{"num_agents": "3", "episode_len": 2})
	}, BaseEnvOptions{NumEnvs: 2})
	if err != nil {
		t.Fatal(err)
	}
	batch.Clear()
	if err := ma.Poll(&batch); err != nil || len(batch.Agents) != 6 {
		t.Fatalf("multi-agent Poll: %v, %d agents", err, len(batch.Agents))
	}
	v, _ := NewVectorEnv(randomMaker(RandomEnvConfig{}), 2)
	vb, err := ToBaseEnv(func(int) (any, error) { return v, nil }, BaseEnvOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if same, err := ToBaseEnv(func(int) (any, error) { return vb, nil }, BaseEnvOptions{}); err != nil || same != vb {
		t.Fatalf("BaseEnv through ToBaseEnv: %v", err)
	}
	if _, err := ToBaseEnv(func(int) (any, error) { return 42, nil }, BaseEnvOptions{}); err == nil {
		t.Fatal("an int became a BaseEnv")
	}
}

func TestRandomEnvValidates(t *testing.T) {
	e, err := NewRandomEnv(RandomEnvConfig{EpisodeLen: 1, ActionSpace: spaces.NewBox(-1, 1, 2)})
	if err != nil {
		t.Fatal(err)
	}
	obs := make([]float32, 4)
	if _, err := e.Step([]float32{0, 0}, obs); !errors.Is(err, ErrNeedsReset) {
		t.Fatalf("step before reset: %v", err)
	}
	e.Reset(WithSeed(1), obs)
	var ae *ActionError
	if _, err := e.Step([]float32{0, 2}, obs); !errors.As(err, &ae) {
		t.Fatalf("out of bounds action: %v", err)
	}
	if r, err := e.Step([]float32{0, 1}, obs); err != nil || !r.Truncated {
		t.Fatalf("step: %+v %v", r, err)
	}
	if _, err := e.Step([]float32{0, 1}, obs); !errors.Is(err, ErrNeedsReset) {
		t.Fatalf("step after end: %v", err)
	}
	for _, bad := range []RandomEnvConfig{{MinEpisodeLen: 5, MaxEpisodeLen: 2}, {PError: 2}, {StepDelay: -1}} {
		if _, err := NewRandomEnv(bad); err == nil {
			t.Fatalf("config %+v accepted", bad)
		}
	}
}
