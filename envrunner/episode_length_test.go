package envrunner_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/envrunner"
)

// lengthRecorder counts each episode's OnEpisodeStep calls and checks Episode.Length against
// them.
type lengthRecorder struct {
	t     *testing.T
	steps map[int64]int
}

func (c *lengthRecorder) OnEpisodeStep(_ *envrunner.Runner, ep *envrunner.Episode) {
	c.steps[ep.ID]++
	assert.Equal(c.t, c.steps[ep.ID], ep.Length(), "episode %d: Length in its step callback", ep.ID)
}

// TestEpisodeLengthLateAgent checks the length and return of episodes whose second agent
// joins at step 3: the length counts env steps once (the first agent's steps until the second
// joins, then the steps in which either stepped), the return is the sum of the agents'
// totals, and each row's t is the env step of its observation (the second agent's first row
// has t 3). With OnEpisodeStep the runner counts every episode's steps through its touched
// list, without it an episode of one agent by its agent's steps: both give the same.
func TestEpisodeLengthLateAgent(t *testing.T) {
	for _, withStep := range []bool{false, true} {
		t.Run(fmt.Sprintf("OnEpisodeStep=%v", withStep), func(t *testing.T) {
			const length = 6
			se := newScriptedEnv(2, length, "a", "b")
			se.joins = func(k int) int { return 3 * k }
			cfg := envrunner.Config{Env: se, NumEnvs: 2, Policies: scriptedPolicies(envrunner.DefaultPolicyID),
				FragmentLength: 4}
			var rec *lengthRecorder
			if withStep {
				rec = &lengthRecorder{t: t, steps: map[int64]int{}}
				cfg.Callbacks = rec
			}
			r := newRunner(t, cfg)
			batches := sampleBatches(t, r, 6)
			ms := r.Metrics(nil)
			require.GreaterOrEqual(t, len(ms), 4)
			for _, m := range ms {
				assert.Equal(t, length, m.EpisodeLength, "episode %d", m.EpisodeID)
				// a: reward 1 at steps 1..6; b: 1 with each observation, from step 3 on.
				assert.Equal(t, float64(length+length-2), m.EpisodeReturn, "episode %d", m.EpisodeID)
				require.Len(t, m.AgentReturns, 2)
				if withStep {
					assert.Equal(t, length, rec.steps[m.EpisodeID], "episode %d: OnEpisodeStep calls", m.EpisodeID)
				}
			}
			rows := 0
			for _, mb := range batches {
				b := mb.PolicyBatches[envrunner.DefaultPolicyID]
				for i := range b.Count {
					k := keyOfRow(b, i, se.agents)
					assert.Equal(t, int32(k.t), b.T[i], "row %d (%+v): t", i, k)
				}
				rows += b.Count
			}
			require.NotZero(t, rows)
		})
	}
}
