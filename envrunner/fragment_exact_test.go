package envrunner_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
)

// TestTruncatedFragmentsAreExact: in truncate_episodes mode every batch holds exactly
// FragmentLength*NumEnvs env steps (RLlib builds a truncated batch when built plus ongoing
// steps reach rollout_fragment_length), also when the sub-environments report their steps
// at their own pace (an asynchronous BaseEnv, an ExternalEnv's clients) and resets are
// asynchronous, so that one runner step can cross the target by several env steps: the
// steps beyond it go to the next batch. No transition is lost or repeated across batches.
func TestTruncatedFragmentsAreExact(t *testing.T) {
	const envs, frag = 4, 10
	for _, tc := range []struct {
		name   string
		agents []env.AgentID
		async  bool
	}{
		{name: "sync"},
		{name: "async", async: true},
		{name: "async_multiagent", agents: []env.AgentID{"x", "y"}, async: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			se := newScriptedEnv(envs, 7, tc.agents...)
			if tc.async {
				se.async = true
				// Sub-environment e reports its step in polls where (poll+e)%(e+1) == 0, each
				// at its own pace.
				se.ready = func(e, poll int) bool { return (poll+e)%(e+1) == 0 }
			}
			r := newRunner(t, envrunner.Config{Env: se, NumEnvs: envs, Policies: scriptedPolicies(envrunner.DefaultPolicyID),
				FragmentLength: frag, Seed: 5})
			agents := se.agents
			seen := map[scriptKey]bool{}
			for k, mb := range sampleBatches(t, r, 12) {
				b := mb.PolicyBatches[envrunner.DefaultPolicyID]
				require.Equal(t, envs*frag, mb.EnvSteps, "fragment %d: env steps", k)
				steps := map[string]bool{}
				for _, c := range checkChunks(t, b) {
					for i := c.start; i < c.end; i++ {
						key := keyOfRow(b, i, agents)
						require.False(t, seen[key], "fragment %d row %d: %+v twice", k, i, key)
						seen[key] = true
						steps[fmt.Sprint(key.env, key.ep, key.t)] = true
					}
				}
				assert.Len(t, steps, envs*frag, "fragment %d: the rows' distinct env steps", k)
				assert.Equal(t, len(agents)*envs*frag, b.Count, "fragment %d: rows", k)
			}
			// Every transition of an episode is in some batch, in order.
			for key := range seen {
				if key.t > 0 {
					prev := key
					prev.t--
					assert.True(t, seen[prev], "%+v without the transition before it", key)
				}
			}
		})
	}
}
