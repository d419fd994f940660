package envrunner_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/env/classic"
	"github.com/onnxrl/sampler/envrunner"
)

// TestBaseEnvKinds runs CartPole-v1 through each kind of BaseEnv (the synchronous adapter,
// a VectorEnv, and a RemoteVectorEnv whose resets are asynchronous and whose
// sub-environments step on their own goroutines) and checks every recorded transition
// against the environment's dynamics. The final observation of an episode and the reset of
// its sub-environment meet in the same step in all of them.
func TestBaseEnvKinds(t *testing.T) {
	p := bundledPolicy(t, "cartpole_mlp")
	const envs, frag = 4, 40
	opts := env.BaseEnvOptions{NumEnvs: envs, Seed: env.WithSeed(21)}
	makeCartPole := func(int) (any, error) { return env.Make("CartPole-v1", env.Config{"max_episode_steps": 60}) }
	for _, tc := range []struct {
		name string
		make func(t *testing.T) env.BaseEnv
	}{
		{name: "sync", make: func(t *testing.T) env.BaseEnv {
			be, err := env.ToBaseEnv(makeCartPole, opts)
			require.NoError(t, err)
			return be
		}},
		{name: "vector", make: func(t *testing.T) env.BaseEnv {
			v, err := env.NewVectorEnv(func(int) (env.Env, error) { return classic.NewCartPole(env.Config{"max_episode_steps": 60}) }, envs)
			require.NoError(t, err)
			be, err := env.NewVectorBaseEnv(v, opts)
			require.NoError(t, err)
			return be
		}},
		{name: "remote_wait_all", make: func(t *testing.T) env.BaseEnv {
			be, err := env.NewRemoteVectorEnv(makeCartPole, env.RemoteVectorEnvOptions{BaseEnvOptions: opts, BatchWait: env.WaitAll})
			require.NoError(t, err)
			return be
		}},
		{name: "remote", make: func(t *testing.T) env.BaseEnv {
			be, err := env.NewRemoteVectorEnv(makeCartPole, env.RemoteVectorEnvOptions{BaseEnvOptions: opts})
			require.NoError(t, err)
			return be
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRunner(t, envrunner.Config{Env: tc.make(t), NumEnvs: envs, Policies: singlePolicy(p, true),
				FragmentLength: frag, GAE: &envrunner.GAE{Gamma: 0.99, Lambda: 0.95}})
			model := newCartPoleModel(t)
			rows := map[int64]int{}
			ends := 0
			for k, mb := range sampleBatches(t, r, 4) {
				b := mb.PolicyBatches[envrunner.DefaultPolicyID]
				// Exact also where a sub-environment whose reset is in flight does not step
				// (remote), so that a runner step crosses the target by several steps.
				assert.Equal(t, envs*frag, mb.EnvSteps, "fragment %d", k)
				assert.Equal(t, mb.EnvSteps, b.Count, "fragment %d", k)
				for _, c := range checkChunks(t, b) {
					rows[c.epsID] += c.len()
					if b.T[c.start] == 0 {
						assert.True(t, isCartPoleReset(envrunner.Row(b.Obs, 4, c.start)))
					}
					if done(b, c.end-1) {
						ends++
					}
				}
				for i := range b.Count {
					next, term := model.next(t, envrunner.Row(b.Obs, 4, i), b.Actions[i])
					require.InDeltaSlice(t, next, envrunner.Row(b.NewObs, 4, i), 1e-5, "fragment %d row %d (t=%d, done %v)", k, i, b.T[i], done(b, i))
					require.Equal(t, term, b.Terminateds[i], "fragment %d row %d", k, i)
				}
			}
			assert.Positive(t, ends)
			ms := r.Metrics(nil)
			assert.Len(t, ms, ends)
			for _, m := range ms {
				assert.Equal(t, rows[m.EpisodeID], m.EpisodeLength)
			}
		})
	}
}
