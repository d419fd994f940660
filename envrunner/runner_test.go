package envrunner_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
)

// Reset observations of CartPole-v1 are drawn from [-0.05, 0.05).
func isCartPoleReset(obs []float32) bool {
	for _, v := range obs {
		if v < -0.05 || v >= 0.05 {
			return false
		}
	}
	return true
}

// TestCartPoleBatchIntegrity samples CartPole-v1 with the bundled policy (exploring) in
// truncate_episodes mode and checks every row of every fragment against the environment's
// dynamics, the chunk structure, the cut between fragments, and the metrics and counters.
func TestCartPoleBatchIntegrity(t *testing.T) {
	p := bundledPolicy(t, "cartpole_mlp")
	for _, tc := range []struct {
		envs, frag, maxSteps, batches int
	}{
		{envs: 4, frag: 50, batches: 6},
		{envs: 8, frag: 25, maxSteps: 30, batches: 8}, // truncations by the time limit too
	} {
		t.Run(fmt.Sprintf("envs=%d,max_steps=%d", tc.envs, tc.maxSteps), func(t *testing.T) {
			cfg := env.Config{}
			if tc.maxSteps > 0 {
				cfg["max_episode_steps"] = tc.maxSteps
			}
			// Sub-environment 0 always pushes right (the env's own action), so that episodes
			// terminate whatever the policy.
			r := newRunner(t, envrunner.Config{Env: pushing(makeEnv(t, "CartPole-v1", cfg, envOpts{numEnvs: tc.envs, seed: 11})),
				NumEnvs: tc.envs, Policies: singlePolicy(p, true), FragmentLength: tc.frag, Seed: 5})
			model := newCartPoleModel(t)
			type open struct {
				t   int32
				env int32
				obs []float32
			}
			cont := map[int64]open{} // episodes cut by the last fragment
			seen := map[int64]bool{}
			rows := map[int64]int{} // rows per episode over all fragments
			ended := map[int64]bool{}
			var terms, truncs, cuts int
			actions := map[float32]int{}
			for k, mb := range sampleBatches(t, r, tc.batches) {
				want := tc.frag * tc.envs
				require.Equal(t, []envrunner.PolicyID{envrunner.DefaultPolicyID}, mb.PolicyIDs())
				b := mb.PolicyBatches[envrunner.DefaultPolicyID]
				assert.Equal(t, want, mb.EnvSteps, "fragment %d: env steps", k)
				assert.Equal(t, want, mb.AgentSteps, "fragment %d: agent steps", k)
				require.Equal(t, want, b.Count, "fragment %d: rows", k)
				assert.Equal(t, 4, b.ObsWidth)
				assert.Equal(t, 1, b.ActionWidth)
				assert.Equal(t, 2, b.DistWidth)
				require.Len(t, b.VfPreds, b.Count, "vf_preds")
				require.Len(t, b.ActionLogp, b.Count, "action_logp")
				assert.Empty(t, b.Advantages, "no GAE configured")
				assert.Empty(t, b.StateWidths)
				cs := checkChunks(t, b)
				for i := range b.Count {
					obs, newObs := envrunner.Row(b.Obs, 4, i), envrunner.Row(b.NewObs, 4, i)
					a := b.Actions[i]
					actions[a]++
					require.True(t, a == 0 || a == 1, "row %d: action %v", i, a)
					assert.Equal(t, float32(1), b.Rewards[i], "row %d: reward", i)
					if b.EnvID[i] == 0 {
						assert.Equal(t, float32(1), a, "row %d: sub-environment 0 pushes right", i)
					} else {
						dist := envrunner.Row(b.ActionDistInputs, 2, i)
						assert.InDelta(t, logSoftmaxAt(dist, int(a)), float64(b.ActionLogp[i]), 1e-5, "row %d: action_logp", i)
					}
					// The recorded transition is the environment's: new_obs follows from obs
					// and the action, and terminated says whether it left the bounds.
					next, term := model.next(t, obs, a)
					assert.InDeltaSlice(t, next, newObs, 1e-5, "row %d (t=%d, env %d, terminated %v): new_obs", i, b.T[i], b.EnvID[i], b.Terminateds[i])
					assert.Equal(t, term, b.Terminateds[i], "row %d: terminated", i)
					if tc.maxSteps > 0 {
						assert.Equal(t, b.T[i] == int32(tc.maxSteps-1), b.Truncateds[i], "row %d (t=%d): truncated", i, b.T[i])
					} else {
						assert.False(t, b.Truncateds[i])
					}
				}
				for _, c := range cs {
					first, last := c.start, c.end-1
					assert.Equal(t, int32(0), c.agent)
					if o, ok := cont[c.epsID]; ok {
						// The rest of an episode cut by the previous fragment.
						assert.Equal(t, o.t, b.T[first], "episode %d: t after the cut", c.epsID)
						assert.Equal(t, o.env, b.EnvID[first], "episode %d: env_id after the cut", c.epsID)
						assert.Equal(t, o.obs, envrunner.Row(b.Obs, 4, first), "episode %d: obs after the cut", c.epsID)
						delete(cont, c.epsID)
					} else {
						require.False(t, seen[c.epsID], "episode %d comes back after its chunk ended", c.epsID)
						assert.Equal(t, int32(0), b.T[first], "episode %d starts at t=%d", c.epsID, b.T[first])
						assert.True(t, isCartPoleReset(envrunner.Row(b.Obs, 4, first)), "episode %d: first obs %v", c.epsID, envrunner.Row(b.Obs, 4, first))
					}
					seen[c.epsID] = true
					rows[c.epsID] += c.len()
					switch {
					case b.Terminateds[last]:
						terms++
						ended[c.epsID] = true
					case b.Truncateds[last]:
						truncs++
						ended[c.epsID] = true
					default:
						cuts++
						cont[c.epsID] = open{t: b.T[last] + 1, env: b.EnvID[last], obs: slices.Clone(envrunner.Row(b.NewObs, 4, last))}
					}
				}
				assert.LessOrEqual(t, len(cont), tc.envs, "fragment %d: more running episodes than sub-environments", k)
				for id := range cont {
					assert.False(t, ended[id])
				}
			}
			assert.Positive(t, terms, "no episode terminated")
			assert.Positive(t, cuts, "no episode was cut by a fragment")
			if tc.maxSteps > 0 {
				assert.Positive(t, truncs, "no episode was truncated")
			}
			assert.Positive(t, actions[0], "exploring, both actions appear")
			assert.Positive(t, actions[1], "exploring, both actions appear")

			// Metrics: one per ended episode, with its length and return (1 per step).
			ms := r.Metrics(nil)
			require.Len(t, ms, len(ended))
			sum := 0
			for _, m := range ms {
				require.True(t, ended[m.EpisodeID], "metrics of episode %d, which did not end in the batches", m.EpisodeID)
				assert.Equal(t, rows[m.EpisodeID], m.EpisodeLength, "episode %d: length", m.EpisodeID)
				assert.Equal(t, float64(m.EpisodeLength), m.EpisodeReturn, "episode %d: return", m.EpisodeID)
				assert.Nil(t, m.AgentReturns, "one agent")
				sum += m.EpisodeLength
			}
			assert.Empty(t, r.Metrics(nil), "Metrics empties the list")
			for id := range cont {
				sum += rows[id]
			}
			c := r.Counters()
			total := tc.batches * tc.frag * tc.envs
			assert.Equal(t, int64(total), c.EnvSteps)
			assert.Equal(t, int64(total), c.AgentSteps)
			assert.Equal(t, int64(len(ms)), c.Episodes)
			assert.Zero(t, c.FaultyEpisodes)
			assert.Equal(t, int64(total), int64(sum), "ended lengths + running lengths")
			assert.Equal(t, int64(tc.batches*tc.frag+1), c.Steps, "one step for the first observations, then one per env step")
		})
	}
}

// Without exploration the action is the mode of the distribution and its logp is 0, as
// RLlib's StochasticSampling records it (zeros_like the sampled logp).
func TestGreedyActions(t *testing.T) {
	p := bundledPolicy(t, "cartpole_mlp")
	r := newRunner(t, envrunner.Config{Env: makeEnv(t, "CartPole-v1", nil, envOpts{numEnvs: 4, seed: 3}),
		NumEnvs: 4, Policies: singlePolicy(p, false), FragmentLength: 30})
	for _, mb := range sampleBatches(t, r, 2) {
		b := mb.PolicyBatches[envrunner.DefaultPolicyID]
		checkChunks(t, b)
		for i := range b.Count {
			d := envrunner.Row(b.ActionDistInputs, 2, i)
			want := float32(0)
			if d[1] > d[0] {
				want = 1
			}
			assert.Equal(t, want, b.Actions[i], "row %d: greedy action for logits %v", i, d)
			assert.Zero(t, b.ActionLogp[i], "row %d: greedy logp", i)
			assert.Equal(t, env.DefaultAgentID, b.AgentID[i], "row %d: a single-agent env's agent id", i)
		}
	}
}

// TestCompleteEpisodes: in complete_episodes mode a batch holds whole episodes only, at
// least the target number of steps, each episode in exactly one batch.
func TestCompleteEpisodes(t *testing.T) {
	p := bundledPolicy(t, "cartpole_mlp")
	for _, by := range []string{envrunner.EnvSteps, envrunner.AgentSteps} {
		t.Run(by, func(t *testing.T) {
			const envs, frag = 4, 20
			r := newRunner(t, envrunner.Config{Env: pushing(makeEnv(t, "CartPole-v1", env.Config{"max_episode_steps": 35}, envOpts{numEnvs: envs, seed: 21})),
				NumEnvs: envs, Policies: singlePolicy(p, true), FragmentLength: frag, BatchMode: envrunner.CompleteEpisodes,
				CountStepsBy: by, Seed: 2})
			inBatch := map[int64]int{}
			lengths := map[int64]int{}
			var terms, truncs int
			for k, mb := range sampleBatches(t, r, 5) {
				b := mb.PolicyBatches[envrunner.DefaultPolicyID]
				assert.GreaterOrEqual(t, b.Count, envs*frag, "fragment %d: rows", k)
				assert.Equal(t, b.Count, mb.EnvSteps)
				assert.Equal(t, b.Count, mb.AgentSteps)
				for _, c := range checkChunks(t, b) {
					_, dup := inBatch[c.epsID]
					require.False(t, dup, "episode %d in fragments %d and %d", c.epsID, inBatch[c.epsID], k)
					inBatch[c.epsID] = k
					lengths[c.epsID] = c.len()
					assert.Equal(t, int32(0), b.T[c.start], "episode %d does not start at t=0", c.epsID)
					last := c.end - 1
					require.True(t, done(b, last), "episode %d: its chunk ends without the episode ending", c.epsID)
					if b.Terminateds[last] {
						terms++
					} else {
						truncs++
						assert.Equal(t, int32(34), b.T[last])
					}
				}
			}
			assert.Positive(t, terms)
			assert.Positive(t, truncs)
			// Every episode in the batches ended, with a metric of the same length; episodes
			// that ended after the last batch was taken are not in it yet.
			ms := r.Metrics(nil)
			found := 0
			for _, m := range ms {
				if n, ok := lengths[m.EpisodeID]; ok {
					found++
					assert.Equal(t, n, m.EpisodeLength)
				}
			}
			assert.Equal(t, len(lengths), found)
		})
	}
}

// Take cuts whatever was collected: after a few manual steps it returns the partial fragment.
func TestTakePartialFragment(t *testing.T) {
	p := bundledPolicy(t, "cartpole_mlp")
	r := newRunner(t, envrunner.Config{Env: makeEnv(t, "CartPole-v1", nil, envOpts{numEnvs: 3, seed: 1}),
		NumEnvs: 3, Policies: singlePolicy(p, true), FragmentLength: 100})
	for range 8 {
		require.NoError(t, r.Step())
		assert.False(t, r.Ready())
	}
	var mb envrunner.MultiAgentBatch
	r.Take(&mb)
	b := mb.PolicyBatches[envrunner.DefaultPolicyID]
	assert.Equal(t, 3*7, b.Count, "the first step only takes the first observations")
	assert.Equal(t, 3*7, mb.EnvSteps)
	checkChunks(t, b)
	// Nothing left: an immediate Take is empty.
	r.Take(&mb)
	assert.Zero(t, mb.Rows())
	assert.Zero(t, mb.EnvSteps)
	assert.Empty(t, mb.PolicyIDs())
}

// TestDeterminism: two runners with the same seeds give the same fragments, column by
// column; another runner seed gives other actions.
func TestDeterminism(t *testing.T) {
	for _, tc := range []struct {
		name, model, env string
		gae              bool
	}{
		{name: "cartpole", model: "cartpole_mlp", env: "CartPole-v1"},
		{name: "cartpole_gae", model: "cartpole_mlp", env: "CartPole-v1", gae: true},
		{name: "lstm", model: "lstm_policy", env: "StatelessCartPole", gae: true},
		{name: "pendulum", model: "pendulum_gaussian", env: "Pendulum-v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := bundledPolicy(t, tc.model)
			run := func(seed uint64) []*envrunner.MultiAgentBatch {
				cfg := envrunner.Config{Env: makeEnv(t, tc.env, nil, envOpts{numEnvs: 4, seed: 100}), NumEnvs: 4,
					Policies: singlePolicy(p, true), FragmentLength: 30, Seed: seed, MaxSeqLen: 7}
				if tc.gae {
					cfg.GAE = &envrunner.GAE{Gamma: 0.99, Lambda: 0.95}
				}
				return sampleBatches(t, newRunner(t, cfg), 4)
			}
			a, b, c := run(7), run(7), run(8)
			for k := range a {
				require.Equal(t, *a[k].PolicyBatches[envrunner.DefaultPolicyID], *b[k].PolicyBatches[envrunner.DefaultPolicyID], "fragment %d", k)
				assert.Equal(t, a[k].EnvSteps, b[k].EnvSteps)
			}
			assert.NotEqual(t, a[0].PolicyBatches[envrunner.DefaultPolicyID].Actions, c[0].PolicyBatches[envrunner.DefaultPolicyID].Actions,
				"another runner seed samples other actions")
		})
	}
}

// TestPerfStats: after sampling, the mean phase times are positive; with PerfEMA they are
// moving averages (finite, positive); rendering is timed only with Render.
func TestPerfStats(t *testing.T) {
	p := bundledPolicy(t, "cartpole_mlp")
	for _, tc := range []struct {
		name   string
		ema    float64
		render bool
	}{{name: "mean"}, {name: "ema", ema: 0.1}, {name: "render", render: true}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRunner(t, envrunner.Config{Env: makeEnv(t, "CartPole-v1", nil, envOpts{numEnvs: 4, seed: 1}), NumEnvs: 4,
				Policies: singlePolicy(p, true), FragmentLength: 20, PerfEMA: tc.ema, Render: tc.render})
			assert.Equal(t, envrunner.PerfStats{}, r.PerfStats(), "nothing measured yet")
			sampleBatches(t, r, 2)
			ps := r.PerfStats()
			for name, v := range map[string]float64{"raw_obs": ps.MeanRawObsProcessingMs, "inference": ps.MeanInferenceMs,
				"action": ps.MeanActionProcessingMs, "env_wait": ps.MeanEnvWaitMs, "sample_output": ps.MeanSampleOutputMs} {
				assert.False(t, math.IsNaN(v) || math.IsInf(v, 0), "%s: %v", name, v)
				assert.Positive(t, v, name)
				assert.Less(t, v, 1000.0, "%s: %v ms per step", name, v)
			}
			if tc.render {
				assert.Positive(t, ps.MeanEnvRenderMs)
			} else {
				assert.Zero(t, ps.MeanEnvRenderMs)
			}
		})
	}
}
