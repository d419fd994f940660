package env

import (
	"errors"
	"slices"
	"testing"
)

// TestColumnarMatchesPoll drives two VectorEnvs of the same seeded RandomEnvs, one through
// Poll/SendActions and one through the columnar protocol, with the same actions: the
// ready sub-environments, observations, rewards and flags must be the same at every step.
func TestColumnarMatchesPoll(t *testing.T) {
	const n = 4
	mk := func() BaseEnv {
		v, err := NewVectorEnv(randomMaker(RandomEnvConfig{MinEpisodeLen: 1, MaxEpisodeLen: 6, RewardIsStep: true}), n)
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewVectorBaseEnv(v, BaseEnvOptions{Seed: WithSeed(3)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pb, cb := mk(), mk().(Columnar)
	c := cb.Columns()
	if len(c.Obs) != n*c.ObsSize || len(c.Actions) != n*c.ActionSize || len(c.Results) != n || len(c.Reset) != n {
		t.Fatalf("columns: %d obs (%d each), %d actions (%d each), %d results, %d reset flags",
			len(c.Obs), c.ObsSize, len(c.Actions), c.ActionSize, len(c.Results), len(c.Reset))
	}
	type row struct {
		env        int
		obs        []float32
		reward     float64
		term, trnc bool
		reset      bool
	}
	var pbatch, cbatch Batch
	episodes := 0
	for step := range 300 {
		pbatch.Clear()
		cbatch.Clear()
		if err := pb.Poll(&pbatch); err != nil {
			t.Fatal(err)
		}
		ready, err := cb.PollColumns(&cbatch)
		if err != nil {
			t.Fatal(err)
		}
		if len(cbatch.Agents) != 0 || len(cbatch.Envs) != 0 {
			t.Fatalf("step %d: PollColumns appended %d agents, %d statuses", step, len(cbatch.Agents), len(cbatch.Envs))
		}
		var want, got []row
		for i, a := range pbatch.Agents {
			want = append(want, row{a.Env, slices.Clone(a.Obs), a.Reward, a.Terminated, a.Truncated, pbatch.Envs[i].Reset})
		}
		for _, e := range ready {
			r := c.Results[e]
			got = append(got, row{e, slices.Clone(c.Obs[e*c.ObsSize : (e+1)*c.ObsSize]), r.Reward, r.Terminated, r.Truncated, c.Reset[e]})
		}
		if !slices.EqualFunc(want, got, func(a, b row) bool {
			return a.env == b.env && slices.Equal(a.obs, b.obs) && a.reward == b.reward && a.term == b.term && a.trnc == b.trnc && a.reset == b.reset
		}) {
			t.Fatalf("step %d: Poll %+v, columns %+v", step, want, got)
		}
		var acts []Action
		for _, a := range pbatch.Agents {
			act := float32((step + a.Env) % 2)
			if a.Terminated || a.Truncated {
				episodes++
				var rb Batch
				if _, err := pb.TryReset(a.Env, Seed{}, &rb); err != nil {
					t.Fatal(err)
				}
				ok, err := cb.ResetColumns(a.Env, Seed{}, &cbatch)
				if err != nil || !ok {
					t.Fatalf("ResetColumns(%d) = %v, %v", a.Env, ok, err)
				}
				if !c.Reset[a.Env] || !slices.Equal(rb.Agents[0].Obs, c.Obs[a.Env*c.ObsSize:(a.Env+1)*c.ObsSize]) {
					t.Fatalf("step %d: reset of %d differs", step, a.Env)
				}
			}
			acts = append(acts, Action{Env: a.Env, Agent: a.Agent, Action: []float32{act}})
			c.Actions[a.Env] = act
		}
		if err := pb.SendActions(acts); err != nil {
			t.Fatal(err)
		}
		if err := cb.StepColumns(); err != nil {
			t.Fatal(err)
		}
	}
	if episodes < 50 {
		t.Fatalf("only %d episodes", episodes)
	}
}

// TestColumnarErrors checks StepColumns' refusals: before a poll, with an ended
// sub-environment not reset, and with an action outside the space (after which the
// sub-environments still wait, and a good action steps them).
func TestColumnarErrors(t *testing.T) {
	v, err := NewVectorEnv(randomMaker(RandomEnvConfig{MinEpisodeLen: 3, MaxEpisodeLen: 3}), 2)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewVectorBaseEnv(v, BaseEnvOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cb := b.(Columnar)
	c := cb.Columns()
	if err := cb.StepColumns(); !errors.Is(err, ErrBadActions) {
		t.Fatalf("StepColumns before a poll: %v", err)
	}
	var batch Batch
	if _, err := cb.PollColumns(&batch); err != nil {
		t.Fatal(err)
	}
	c.Actions[0], c.Actions[1] = 0, 7 // 7 is outside Discrete(2)
	var ae *ActionError
	if err := cb.StepColumns(); !errors.As(err, &ae) {
		t.Fatalf("StepColumns with a bad action: %v", err)
	}
	c.Actions[1] = 1
	for range 3 { // the episodes end on the third step
		if err := cb.StepColumns(); err != nil {
			t.Fatal(err)
		}
		ready, err := cb.PollColumns(&batch)
		if err != nil || len(ready) != 2 {
			t.Fatalf("PollColumns: %v, %v", ready, err)
		}
	}
	if !c.Results[0].Terminated && !c.Results[0].Truncated {
		t.Fatalf("episode did not end: %+v", c.Results[0])
	}
	if err := cb.StepColumns(); !errors.Is(err, ErrNeedsReset) {
		t.Fatalf("StepColumns with ended sub-environments: %v", err)
	}
	if ok, err := cb.ResetColumns(5, Seed{}, &batch); ok || err == nil {
		t.Fatalf("ResetColumns(5) = %v, %v", ok, err)
	}
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.PollColumns(&batch); !errors.Is(err, ErrStopped) {
		t.Fatalf("PollColumns after Stop: %v", err)
	}
}
