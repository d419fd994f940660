package envrunner_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/spaces"
)

func mustSpace(tb testing.TB, js string) spaces.Space {
	tb.Helper()
	s, err := spaces.Unmarshal([]byte(js))
	require.NoError(tb, err)
	return s
}

// TestRandomPolicy samples with RLlib's RandomPolicy on environments with various spaces:
// every action is in the action space (the environments reject others), observations are
// flattened, and there are no model columns. None of it needs the runtime.
func TestRandomPolicy(t *testing.T) {
	const dictObs = `{"type": "Dict", "spaces": {"pos": {"type": "Box", "low": -1, "high": 1, "shape": [2]}, "mode": {"type": "Discrete", "n": 3}}}`
	for _, tc := range []struct {
		name      string
		env       string
		cfg       env.Config
		obs, act  spaces.Space
		obsWidth  int
		checkRows func(t *testing.T, b *envrunner.SampleBatch, i int)
	}{
		{
			name: "Pendulum-v1 (Box actions)", env: "Pendulum-v1",
			obs: spaces.NewBoxBounds([]float32{-1, -1, -8}, []float32{1, 1, 8}), act: spaces.NewBox(-2, 2, 1), obsWidth: 3,
			checkRows: func(t *testing.T, b *envrunner.SampleBatch, i int) {
				assert.LessOrEqual(t, b.Rewards[i], float32(0), "Pendulum's rewards are costs")
			},
		},
		{
			name: "RandomEnv Dict obs, MultiDiscrete actions", env: "RandomEnv",
			cfg: env.Config{"observation_space": dictObs, "action_space": `{"type": "MultiDiscrete", "nvec": [3, 4]}`, "episode_len": 6, "reward": 0.5},
			obs: mustSpace(t, dictObs), act: &spaces.MultiDiscrete{Nvec: []int64{3, 4}}, obsWidth: 5,
			checkRows: func(t *testing.T, b *envrunner.SampleBatch, i int) {
				// Flattened in key order: mode one-hot (3), then pos (2).
				row := envrunner.Row(b.Obs, 5, i)
				assert.Equal(t, float32(1), row[0]+row[1]+row[2], "row %d: one-hot %v", i, row[:3])
				assert.Equal(t, float32(0.5), b.Rewards[i])
			},
		},
		{
			name: "RandomEnv Tuple actions", env: "RandomEnv",
			cfg: env.Config{"action_space": `{"type": "Tuple", "spaces": [{"type": "Discrete", "n": 2, "start": 5}, {"type": "MultiBinary", "n": 3}, {"type": "Box", "low": 0, "high": 1, "shape": [2]}]}`,
				"min_episode_len": 2, "max_episode_len": 9},
			obs: spaces.NewBox(-1, 1, 4), obsWidth: 4,
			act: &spaces.Tuple{Spaces: []spaces.Space{&spaces.Discrete{N: 2, Start: 5}, &spaces.MultiBinary{N: 3}, spaces.NewBox(0, 1, 2)}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			be := makeEnv(t, tc.env, tc.cfg, envOpts{numEnvs: 3, seed: 5})
			r := newRunner(t, envrunner.Config{Env: be, NumEnvs: 3, FragmentLength: 25, GAE: &envrunner.GAE{Gamma: 0.9, Lambda: 0.9},
				Policies:      map[envrunner.PolicyID]envrunner.PolicyConfig{"random": {Random: true, ObservationSpace: tc.obs, ActionSpace: tc.act}},
				PolicyMapping: func(env.AgentID, *envrunner.Episode) envrunner.PolicyID { return "random" }})
			distinct := map[float32]bool{}
			for _, mb := range sampleBatches(t, r, 3) {
				assert.Equal(t, []envrunner.PolicyID{"random"}, mb.PolicyIDs())
				b := mb.PolicyBatches["random"]
				assert.Equal(t, 75, b.Count)
				assert.Equal(t, tc.obsWidth, b.ObsWidth)
				assert.Equal(t, tc.act.Size(), b.ActionWidth)
				assert.Same(t, tc.act, b.ActionSpace)
				assert.Zero(t, b.DistWidth)
				assert.Empty(t, b.ActionDistInputs)
				assert.Len(t, b.ActionLogp, b.Count, "the uniform sampling's (TestRandomPolicyActionLogpIsUniform)")
				assert.Empty(t, b.VfPreds)
				assert.Len(t, b.Advantages, b.Count)
				checkChunks(t, b)
				for i := range b.Count {
					a := envrunner.Row(b.Actions, b.ActionWidth, i)
					assert.True(t, tc.act.Contains(a), "row %d: action %v not in %s", i, a, spaces.String(tc.act))
					distinct[a[0]] = true
					if tc.checkRows != nil {
						tc.checkRows(t, b, i)
					}
				}
			}
			assert.Greater(t, len(distinct), 1, "the actions are random")
		})
	}
}
