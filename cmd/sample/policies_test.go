package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRunPolicies: MultiAgentCartPole with two policies, agent_0 on the trained MLP (greedy)
// and the others random: the output has both policies' batches, the trained one's agent
// balancing far longer.
func TestRunPolicies(t *testing.T) {
	needRuntime(t)
	out := filepath.Join(t.TempDir(), "ma.jsonl")
	s := runJSON(t, "--env", "MultiAgentCartPole", "--policy", "trained=cartpole_mlp", "--policy", "rand=random",
		"--policy-map", "agent_0=trained", "--policy-map", "agent_*=rand", "--episodes", "4", "--explore=false", "--out", out)
	assert.Equal(t, "rand=random,trained=cartpole_mlp", s.Model)
	rows := map[string]int{}
	for _, b := range readBatches(t, s.Out) {
		for id, pb := range b.PolicyBatches {
			rows[id] += pb.Count
		}
	}
	assert.Equal(t, 4*500, rows["trained"], "the trained policy, greedy, balances for all 500 steps of each episode")
	assert.Positive(t, rows["rand"])
	assert.Less(t, rows["rand"], rows["trained"])
	assert.Equal(t, s.AgentSteps, int64(rows["rand"]+rows["trained"]))

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy", "a=random", "--policy", "b=random"}, "2 policies need --policy-map"},
		{[]string{"--policy", "a=random", "--policy", "b=random", "--policy-map", "agent_0=a"}, `agent "agent_1" matches no --policy-map rule`},
		{[]string{"--policy", "a=random", "--policy-map", "agent_0=c"}, `no policy "c"`},
		{[]string{"--policy", "a"}, "want ID=MODEL"},
		{[]string{"--policy", "a=random", "--policy", "a=random"}, "given twice"},
		{[]string{"--policy", "a=random", "--model", "random"}, "not both"},
		{[]string{"--policy-map", "x=y"}, "--policy-map needs policies"},
		{[]string{"--policy", "a=random", "--policy-map", "[=a"}, "bad glob"},
	} {
		code, _, errs := runCLI(append([]string{"run", "--env", "MultiAgentCartPole", "--steps", "10"}, tc.args...)...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, errs)
		assert.Contains(t, errs, tc.want, tc.args)
	}
	// One policy by id serves every agent without a map.
	s = runJSON(t, "--env", "MultiAgentCartPole", "--policy", "only=random", "--steps", "10")
	assert.Equal(t, "only=random", s.Model)
}
