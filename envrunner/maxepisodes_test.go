package envrunner_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/spaces"
)

// TestSampleReturnsWhenMaxEpisodesReached: once MaxEpisodes episodes have finished, the
// sub-environments run extra episodes that count nothing, so a fragment can never fill;
// Sample must hand over what was collected instead of stepping forever.
func TestSampleReturnsWhenMaxEpisodesReached(t *testing.T) {
	for _, mode := range []string{envrunner.TruncateEpisodes, envrunner.CompleteEpisodes} {
		t.Run(mode, func(t *testing.T) {
			be := makeEnv(t, "CartPole-v1", nil, envOpts{numEnvs: 2, seed: 3})
			r := newRunner(t, envrunner.Config{Env: be, NumEnvs: 2, FragmentLength: 100000, BatchMode: mode, MaxEpisodes: 3,
				Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{"random": {Random: true,
					ObservationSpace: spaces.NewBox(-10, 10, 4), ActionSpace: &spaces.Discrete{N: 2}}},
				PolicyMapping: func(env.AgentID, *envrunner.Episode) envrunner.PolicyID { return "random" }})
			done := make(chan error, 1)
			var mb envrunner.MultiAgentBatch
			go func() { done <- r.Sample(&mb) }()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Fatal("Sample did not return after MaxEpisodes episodes")
			}
			assert.True(t, r.Done())
			assert.Len(t, r.Metrics(nil), 3, "exactly MaxEpisodes episodes are counted")
			b := mb.PolicyBatches["random"]
			require.NotNil(t, b)
			assert.Positive(t, b.Count)
			ends := 0
			for i := range b.Count {
				if b.Terminateds[i] || b.Truncateds[i] {
					ends++
				}
			}
			assert.GreaterOrEqual(t, ends, 3, "the counted episodes' rows are in the batch")
		})
	}
}
