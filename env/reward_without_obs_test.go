package env

import (
	"testing"

	"github.com/onnxrl/sampler/spaces"
)

// rewardOnlyEnv: agent "a" observes every step; "b" observes at reset and then gets rewards
// without observations (AddReward); the step also reports episode-wide info.
type rewardOnlyEnv struct{ t int }

func (e *rewardOnlyEnv) PossibleAgents() []AgentID             { return []AgentID{"a", "b"} }
func (e *rewardOnlyEnv) ObservationSpace(AgentID) spaces.Space { return spaces.NewBox(-9, 9, 1) }
func (e *rewardOnlyEnv) ActionSpace(AgentID) spaces.Space      { return &spaces.Discrete{N: 2} }

func (e *rewardOnlyEnv) Reset(_ Seed, out *MultiAgentStep) error {
	e.t = 0
	out.Clear()
	out.Add("a", 1)
	out.Add("b", 1)
	return nil
}

func (e *rewardOnlyEnv) Step(actions []AgentAction, out *MultiAgentStep) error {
	e.t++
	out.Clear()
	out.Add("a", 1).Obs[0] = float32(e.t)
	out.AddReward("b", 2)
	out.Info = Info{"t": e.t}
	return nil
}

// TestRewardWithoutObservation: the adapter reports a reward given without an observation
// as an AgentObs with Obs nil, expects no action for that agent, reports the step's
// episode-wide info as EnvStatus.Info, and the entry's buffer is reused by a later Add.
func TestRewardWithoutObservation(t *testing.T) {
	be, err := NewMultiAgentBaseEnv(func(int) (MultiAgentEnv, error) { return &rewardOnlyEnv{}, nil }, BaseEnvOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Stop()
	var b Batch
	if err := be.Poll(&b); err != nil || len(b.Agents) != 2 {
		t.Fatalf("first poll: %v, %d agents", err, len(b.Agents))
	}
	if err := be.SendActions([]Action{{Env: 0, Agent: "a", Action: []float32{0}}, {Env: 0, Agent: "b", Action: []float32{1}}}); err != nil {
		t.Fatal(err)
	}
	for step := 1; step <= 3; step++ {
		b.Clear()
		if err := be.Poll(&b); err != nil {
			t.Fatal(err)
		}
		if len(b.Agents) != 2 || b.Agents[1].Agent != "b" || b.Agents[1].Obs != nil || b.Agents[1].Reward != 2 {
			t.Fatalf("step %d: agents %+v, want b with a reward and no observation", step, b.Agents)
		}
		if len(b.Envs) != 1 || b.Envs[0].Info["t"] != step {
			t.Fatalf("step %d: statuses %+v, want the episode-wide info", step, b.Envs)
		}
		// Only "a" acts: an action for "b" is refused.
		if err := be.SendActions([]Action{{Env: 0, Agent: "a", Action: []float32{0}}, {Env: 0, Agent: "b", Action: []float32{0}}}); err == nil {
			t.Fatalf("step %d: an action for an agent without an observation was accepted", step)
		}
		if err := be.SendActions([]Action{{Env: 0, Agent: "a", Action: []float32{0}}}); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	var m MultiAgentStep
	m.Add("x", 3)
	buf := &m.Agents[0].Obs[0]
	m.Clear()
	m.AddReward("x", 1)
	if m.Agents[0].Obs != nil {
		t.Fatal("AddReward: Obs is not nil")
	}
	m.Clear()
	if m.Add("y", 3); &m.Agents[0].Obs[0] != buf {
		t.Fatal("the buffer of an AddReward entry was not reused")
	}
}
