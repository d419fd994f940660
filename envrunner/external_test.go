package envrunner_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/spaces"
)

// restartingEnv is a BaseEnv like an external simulator that starts a new episode without
// ending the old one: each sub-environment observes [episode, t] and, when t would reach
// every, reports the first observation of its next episode (EnvStatus.Reset) instead.
type restartingEnv struct {
	n, every int
	k, t     []int
	started  bool
	acted    []bool
	obs      [][]float32
}

func newRestartingEnv(n, every int) *restartingEnv {
	e := &restartingEnv{n: n, every: every, k: make([]int, n), t: make([]int, n), acted: make([]bool, n), obs: make([][]float32, n)}
	for i := range e.obs {
		e.obs[i] = make([]float32, 2)
	}
	return e
}

func (e *restartingEnv) Poll(dst *env.Batch) error {
	for i := range e.n {
		switch {
		case !e.started:
			dst.Envs = append(dst.Envs, env.EnvStatus{Env: i, Reset: true})
		case !e.acted[i]:
			continue
		case e.t[i]+1 == e.every:
			e.k[i]++
			e.t[i] = 0
			dst.Envs = append(dst.Envs, env.EnvStatus{Env: i, Reset: true})
		default:
			e.t[i]++
			dst.Envs = append(dst.Envs, env.EnvStatus{Env: i})
		}
		e.acted[i] = false
		e.obs[i][0], e.obs[i][1] = float32(e.k[i]), float32(e.t[i])
		r := 1.0
		if e.t[i] == 0 {
			r = 0
		}
		dst.Agents = append(dst.Agents, env.AgentObs{Env: i, Agent: env.DefaultAgentID, Obs: e.obs[i], Reward: r})
	}
	e.started = true
	return nil
}

func (e *restartingEnv) SendActions(actions []env.Action) error {
	for _, a := range actions {
		if e.acted[a.Env] {
			return env.ErrBadActions
		}
		e.acted[a.Env] = true
	}
	return nil
}

func (e *restartingEnv) TryReset(env.EnvID, env.Seed, *env.Batch) (bool, error) {
	panic("restartingEnv: no episode ends, so nothing needs a reset")
}

func (e *restartingEnv) Stop() error { return nil }

// TestEpisodeRestartedByTheEnvironment: when a sub-environment reports a new episode while
// the old one runs, the old one ends as it stands (its pending action never completes), with
// its metrics, and the new one starts at t=0.
func TestEpisodeRestartedByTheEnvironment(t *testing.T) {
	const envs, every = 3, 6
	for _, mode := range []string{envrunner.TruncateEpisodes, envrunner.CompleteEpisodes} {
		t.Run(mode, func(t *testing.T) {
			r := newRunner(t, envrunner.Config{Env: newRestartingEnv(envs, every), NumEnvs: envs, FragmentLength: 10, BatchMode: mode,
				Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: {Random: true,
					ObservationSpace: spaces.NewBox(-1e6, 1e6, 2), ActionSpace: &spaces.Discrete{N: 2}}}})
			rows := map[int64]int{}
			for _, mb := range sampleBatches(t, r, 4) {
				b := mb.PolicyBatches[envrunner.DefaultPolicyID]
				assert.Equal(t, b.Count, mb.EnvSteps)
				for _, c := range checkChunks(t, b) {
					rows[c.epsID] += c.len()
					k := envrunner.Row(b.Obs, 2, c.start)[0]
					for i := c.start; i < c.end; i++ {
						assert.Equal(t, []float32{k, float32(b.T[i])}, envrunner.Row(b.Obs, 2, i), "row %d", i)
						assert.Equal(t, float32(1), b.Rewards[i])
						assert.False(t, done(b, i), "row %d: nothing terminates", i)
					}
				}
			}
			ms := r.Metrics(nil)
			require.NotEmpty(t, ms)
			for _, m := range ms {
				assert.Equal(t, every-1, m.EpisodeLength, "transitions up to the restart")
				assert.Equal(t, float64(every-1), m.EpisodeReturn)
				if mode == envrunner.CompleteEpisodes {
					assert.Contains(t, []int{0, every - 1}, rows[m.EpisodeID], "a whole episode, or one not taken yet")
				}
			}
		})
	}
}

// Runners of one group differ by Worker: their episode ids differ, and their metrics say
// which worker ran the episode.
func TestWorkers(t *testing.T) {
	ids := map[int64]int{}
	for w := range 4 {
		r := newRunner(t, envrunner.Config{Env: makeEnv(t, "RandomEnv", env.Config{"episode_len": 5}, envOpts{numEnvs: 2, seed: 1}),
			NumEnvs: 2, Policies: randomPolicies(envrunner.DefaultPolicyID), FragmentLength: 20, Seed: 9, Worker: w})
		for _, mb := range sampleBatches(t, r, 2) {
			for _, c := range chunksOf(t, mb.PolicyBatches[envrunner.DefaultPolicyID]) {
				if prev, ok := ids[c.epsID]; ok {
					require.Equal(t, w, prev, "episode id %d in workers %d and %d", c.epsID, prev, w)
				}
				ids[c.epsID] = w
			}
		}
		ms := r.Metrics(nil)
		require.NotEmpty(t, ms)
		for _, m := range ms {
			assert.Equal(t, w, m.Worker)
			assert.Equal(t, w, ids[m.EpisodeID])
		}
	}
}
