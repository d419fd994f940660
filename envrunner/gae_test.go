package envrunner_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/spaces"
)

// refGAE computes the advantages and value targets of one chunk from the definition:
// A_i = sum over k >= i of (gamma*lambda)^(k-i) * delta_k, with
// delta_k = r_k + gamma*V_(k+1) - V_k and V_n = bootstrap; the value target is A_i + V_i.
func refGAE(rewards, values []float32, bootstrap, gamma, lambda float64) (adv, vt []float64) {
	n := len(rewards)
	v := func(k int) float64 {
		if k == n {
			return bootstrap
		}
		return float64(values[k])
	}
	adv, vt = make([]float64, n), make([]float64, n)
	for i := range n {
		w := 1.0
		for k := i; k < n; k++ {
			adv[i] += w * (float64(rewards[k]) + gamma*v(k+1) - v(k))
			w *= gamma * lambda
		}
		vt[i] = adv[i] + v(i)
	}
	return adv, vt
}

// discountedReturns returns sum over k >= i of gamma^(k-i) r_k + gamma^(n-i) bootstrap: the
// value targets of GAE with lambda = 1.
func discountedReturns(rewards []float32, bootstrap, gamma float64) []float64 {
	n := len(rewards)
	out := make([]float64, n)
	for i := range n {
		for k := i; k < n; k++ {
			out[i] += math.Pow(gamma, float64(k-i)) * float64(rewards[k])
		}
		out[i] += math.Pow(gamma, float64(n-i)) * bootstrap
	}
	return out
}

func closeTo(want, got float64) bool {
	return math.Abs(want-got) <= 1e-4*math.Max(1, math.Abs(want))
}

// TestGAE compares the advantages and value targets of every chunk with a reference
// computation: chunks that end terminated bootstrap with 0, chunks truncated by the time
// limit with the model's value of the final observation, and chunks cut by the fragment with
// the value of the next observation (which the next fragment's first row of the episode
// records). The values are checked against the model run directly, with the recorded RNN
// state for the LSTM.
func TestGAE(t *testing.T) {
	for _, tc := range []struct {
		name, model, env string
		maxSteps         int
		gamma, lambda    float64
		mode             string
	}{
		{name: "cartpole", model: "cartpole_mlp", env: "CartPole-v1", maxSteps: 25, gamma: 0.99, lambda: 0.95},
		{name: "cartpole_lambda1", model: "cartpole_mlp", env: "CartPole-v1", maxSteps: 25, gamma: 0.9, lambda: 1},
		{name: "cartpole_gamma0", model: "cartpole_mlp", env: "CartPole-v1", maxSteps: 25, gamma: 0, lambda: 0.95},
		{name: "cartpole_complete", model: "cartpole_mlp", env: "CartPole-v1", maxSteps: 25, gamma: 0.99, lambda: 0.95, mode: envrunner.CompleteEpisodes},
		{name: "lstm", model: "lstm_policy", env: "StatelessCartPole", maxSteps: 20, gamma: 0.99, lambda: 0.9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := bundledPolicy(t, tc.model)
			net := newDirectNet(t, p)
			const envs = 4
			be := makeEnv(t, tc.env, env.Config{"max_episode_steps": tc.maxSteps}, envOpts{numEnvs: envs, seed: 31})
			if tc.env == "CartPole-v1" {
				be = pushing(be) // terminations whatever the policy
			}
			r := newRunner(t, envrunner.Config{Env: be,
				NumEnvs: envs, Policies: singlePolicy(p, true), FragmentLength: 30, Seed: 4, BatchMode: tc.mode,
				GAE: &envrunner.GAE{Gamma: tc.gamma, Lambda: tc.lambda}})
			recurrent := len(p.Spec.State) > 0
			statesAt := func(b *envrunner.SampleBatch, cols [][]float32, i int) [][]float32 {
				if !recurrent {
					return nil
				}
				var s [][]float32
				for k, w := range b.StateWidths {
					s = append(s, envrunner.Row(cols[k], w, i))
				}
				return s
			}
			var terms, truncs, cuts int
			next := map[int64]float32{} // bootstrap values of cut chunks, by episode
			for k, mb := range sampleBatches(t, r, 5) {
				b := mb.PolicyBatches[envrunner.DefaultPolicyID]
				require.Len(t, b.Advantages, b.Count)
				require.Len(t, b.ValueTargets, b.Count)
				w := b.ObsWidth
				for _, c := range checkChunks(t, b) {
					// vf_preds is the model's value of each observation.
					for i := c.start; i < c.end; i++ {
						_, v, _ := net.run(t, envrunner.Row(b.Obs, w, i), statesAt(b, b.StateIn, i))
						require.InDelta(t, v, b.VfPreds[i], 1e-5, "fragment %d row %d: vf_preds", k, i)
					}
					if v, ok := next[c.epsID]; ok {
						assert.InDelta(t, v, b.VfPreds[c.start], 1e-5, "episode %d: the bootstrap value of its cut is the value of its next row", c.epsID)
						delete(next, c.epsID)
					}
					last := c.end - 1
					bootstrap := 0.0
					if !b.Terminateds[last] {
						_, v, _ := net.run(t, envrunner.Row(b.NewObs, w, last), statesAt(b, b.StateOut, last))
						bootstrap = float64(v)
					}
					switch {
					case b.Terminateds[last]:
						terms++
					case b.Truncateds[last]:
						truncs++
					default:
						cuts++
						next[c.epsID] = float32(bootstrap)
					}
					rw, vf := b.Rewards[c.start:c.end], b.VfPreds[c.start:c.end]
					adv, vt := refGAE(rw, vf, bootstrap, tc.gamma, tc.lambda)
					var ret []float64
					if tc.lambda == 1 {
						ret = discountedReturns(rw, bootstrap, tc.gamma)
					}
					for j := range c.len() {
						i := c.start + j
						require.True(t, closeTo(adv[j], float64(b.Advantages[i])), "fragment %d row %d (t=%d of a chunk of %d, terminated %v, truncated %v): advantage %v, want %v",
							k, i, b.T[i], c.len(), b.Terminateds[last], b.Truncateds[last], b.Advantages[i], adv[j])
						require.True(t, closeTo(vt[j], float64(b.ValueTargets[i])), "fragment %d row %d: value target %v, want %v", k, i, b.ValueTargets[i], vt[j])
						if tc.gamma == 0 {
							require.InDelta(t, float64(rw[j]-vf[j]), float64(b.Advantages[i]), 1e-5)
						}
						if ret != nil {
							require.True(t, closeTo(ret[j], float64(b.ValueTargets[i])), "row %d: value target %v, want the discounted return %v", i, b.ValueTargets[i], ret[j])
						}
					}
				}
			}
			t.Logf("chunks: %d terminated, %d truncated, %d cut", terms, truncs, cuts)
			assert.Positive(t, truncs, "no chunk truncated by the time limit")
			if tc.model == "cartpole_mlp" {
				assert.Positive(t, terms, "no chunk terminated")
			}
			if tc.mode == envrunner.CompleteEpisodes {
				assert.Zero(t, cuts)
			} else {
				assert.Positive(t, cuts, "no chunk cut by a fragment")
			}
		})
	}
}

// With a random policy there is no value function: GAE takes the values as 0, so the
// advantages and value targets are the discounted rewards to go of each chunk.
func TestGAERandomPolicy(t *testing.T) {
	const gamma, lambda = 0.9, 0.8
	be := makeEnv(t, "RandomEnv", env.Config{"min_episode_len": 3, "max_episode_len": 9, "p_terminated": 0.1, "reward_is_step": true},
		envOpts{numEnvs: 3, seed: 2})
	r := newRunner(t, envrunner.Config{Env: be, NumEnvs: 3, FragmentLength: 7, GAE: &envrunner.GAE{Gamma: gamma, Lambda: lambda},
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: {Random: true,
			ObservationSpace: spaces.NewBox(-1, 1, 4), ActionSpace: &spaces.Discrete{N: 2}}}})
	for k, mb := range sampleBatches(t, r, 4) {
		b := mb.PolicyBatches[envrunner.DefaultPolicyID]
		assert.Empty(t, b.VfPreds)
		for _, c := range checkChunks(t, b) {
			rw := b.Rewards[c.start:c.end]
			for j := range rw {
				assert.Equal(t, float32(b.T[c.start+j]+1), rw[j], "the reward is the 1-based step number")
			}
			want := discountedReturns(rw, 0, gamma*lambda)
			wantVT := discountedReturns(rw, 0, gamma)
			for j := range rw {
				i := c.start + j
				assert.True(t, closeTo(want[j], float64(b.Advantages[i])), "fragment %d row %d: advantage %v, want %v", k, i, b.Advantages[i], want[j])
				// With V = 0 the value target equals the advantage, which is the
				// (gamma*lambda)-discounted reward to go, not the gamma-discounted one.
				assert.Equal(t, b.Advantages[i], b.ValueTargets[i])
				if gamma*lambda != gamma && len(rw)-j > 1 {
					assert.False(t, closeTo(wantVT[j], float64(b.ValueTargets[i])))
				}
			}
		}
	}
}

// Bad GAE parameters are errors.
func TestGAEConfig(t *testing.T) {
	for _, g := range []envrunner.GAE{{Gamma: -0.1, Lambda: 1}, {Gamma: 1.5, Lambda: 1}, {Gamma: 0.9, Lambda: -1},
		{Gamma: 0.9, Lambda: 1.01}, {Gamma: math.NaN(), Lambda: 1}, {Gamma: 0.9, Lambda: math.NaN()}} {
		t.Run(fmt.Sprintf("gamma=%v,lambda=%v", g.Gamma, g.Lambda), func(t *testing.T) {
			be := makeEnv(t, "RandomEnv", nil, envOpts{})
			defer be.Stop()
			_, err := envrunner.New(envrunner.Config{Env: be, GAE: &g, Policies: randomPolicies("a")})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "GAE")
			assert.Contains(t, err.Error(), "[0, 1]")
		})
	}
}
