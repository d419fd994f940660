package runspec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/envrunner"
)

// firstEpsIDs samples one fragment of each of the spec's runners and returns the eps_id
// column of each.
func firstEpsIDs(t *testing.T, s Spec) [][]int64 {
	t.Helper()
	r, err := Build(s)
	require.NoError(t, err)
	defer r.Close()
	var out [][]int64
	for _, rn := range r.Group.Runners() {
		var b envrunner.MultiAgentBatch
		require.NoError(t, rn.Sample(&b))
		out = append(out, append([]int64(nil), b.PolicyBatches[envrunner.DefaultPolicyID].EpsID...))
	}
	return out
}

// TestEpsIDUniqueAcrossRuns: runs of different environments (or models, or settings) made
// with the same seed number their episodes differently (row 0 of a CartPole and of a
// StatelessCartPole file had the same eps_id, so merged datasets mixed their episodes), while
// the same run with the same seed gives the same ids (byte-identical files).
func TestEpsIDUniqueAcrossRuns(t *testing.T) {
	base := Spec{Env: "CartPole-v1", Model: "random", NumEnvs: 2, Workers: 1, Explore: true,
		FragmentLength: 10, BatchMode: envrunner.TruncateEpisodes, CountStepsBy: envrunner.EnvSteps}
	cartpole := firstEpsIDs(t, base)
	assert.Equal(t, cartpole, firstEpsIDs(t, base), "the same run and seed: the same ids")

	other := base
	other.Env = "StatelessCartPole"
	assert.NotEqual(t, cartpole[0][0], firstEpsIDs(t, other)[0][0], "another environment, the same seed")
	greedy := base
	greedy.Explore = false
	assert.NotEqual(t, cartpole[0][0], firstEpsIDs(t, greedy)[0][0], "another setting, the same seed")
	seeded := base
	seeded.Seed = 1
	assert.NotEqual(t, cartpole[0][0], firstEpsIDs(t, seeded)[0][0], "another seed")

	// Every setting in the hash changes it; the seed, fragment length and GAE do not (the
	// runner mixes in the seed; the others do not change which episodes are played).
	pols := map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: {Random: true}}
	id := runID(&base, pols)
	for name, change := range map[string]func(*Spec){
		"env": func(s *Spec) { s.Env = "Pendulum-v1" }, "env config": func(s *Spec) { s.EnvConfig = "a=1" },
		"policy map": func(s *Spec) { s.PolicyMap = []string{"a=b"} }, "explore": func(s *Spec) { s.Explore = false },
		"normalize": func(s *Spec) { s.NormalizeActions = true }, "clip": func(s *Spec) { s.ClipActions = true },
		"remote": func(s *Spec) { s.Remote = true }, "batch mode": func(s *Spec) { s.BatchMode = envrunner.CompleteEpisodes },
		"count by": func(s *Spec) { s.CountStepsBy = envrunner.AgentSteps }, "num envs": func(s *Spec) { s.NumEnvs = 3 },
	} {
		s := base
		change(&s)
		assert.NotEqual(t, id, runID(&s, pols), name)
	}
	for name, change := range map[string]func(*Spec){
		"seed": func(s *Spec) { s.Seed = 9 }, "fragment": func(s *Spec) { s.FragmentLength = 7 },
		"gae": func(s *Spec) { s.GAE, s.Gamma, s.Lambda = true, 0.9, 0.9 }, "workers": func(s *Spec) { s.Workers = 2 },
	} {
		s := base
		change(&s)
		assert.Equal(t, id, runID(&s, pols), name)
	}
	assert.NotEqual(t, id, runID(&base, map[envrunner.PolicyID]envrunner.PolicyConfig{"other": {Random: true}}), "policy id")
}
