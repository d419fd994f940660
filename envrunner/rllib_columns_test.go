package envrunner_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/spaces"
)

// The columns and metrics of issue 36's audit against RLlib's EnvRunnerV2, one test each.

// TestTIsTheEpisodesEnvStepOfTheObservation: t is the episode's env step at which the agent
// observed (RLlib's t), not a count of the agent's own steps: an agent that observes at env
// steps 0, 2, 4 has t 0, 2, 4. The scripted observations carry their env step, so every
// row's t must equal it, under both protocols.
func TestTIsTheEpisodesEnvStepOfTheObservation(t *testing.T) {
	t.Run("agent skips steps", func(t *testing.T) {
		agents := []env.AgentID{"a", "b"}
		se := newScriptedEnv(2, 6, agents...)
		se.skip = func(t, k int) bool { return k == 1 && t%2 == 1 } // b observes at 0, 2, 4, 6
		r := newRunner(t, envrunner.Config{Env: se, NumEnvs: 2, Policies: scriptedPolicies("p"),
			PolicyMapping:  func(env.AgentID, *envrunner.Episode) envrunner.PolicyID { return "p" },
			FragmentLength: 4})
		var bs []int32
		for _, m := range sampleBatches(t, r, 5) {
			b := m.PolicyBatches["p"]
			for i := range b.Count {
				k := keyOfRow(b, i, agents)
				require.Equal(t, int32(k.t), b.T[i], "row %d (%+v)", i, k)
				if k.agent == "b" && k.env == 0 && k.ep == 0 {
					bs = append(bs, b.T[i])
				}
			}
		}
		assert.Equal(t, []int32{0, 2, 4}, bs, "agent b of the first episode")
	})
	// Under the columnar protocol rows have no t of their own (t0 + i): TestColumnarMatchesPollSend
	// holds it equal to the row protocol's.
}

// slowReset is a scriptedEnv whose TryReset takes d.
type slowReset struct {
	*scriptedEnv
	d time.Duration
}

func (s *slowReset) TryReset(e env.EnvID, seed env.Seed, dst *env.Batch) (bool, error) {
	time.Sleep(s.d)
	return s.scriptedEnv.TryReset(e, seed, dst)
}

// TestEnvWaitExcludesResets: resetting a sub-environment is raw observation processing, not
// env wait (RLlib's EnvRunnerV2 resets in _process_observations, under
// raw_obs_processing_time); mean_env_wait_ms is Poll and SendActions only.
func TestEnvWaitExcludesResets(t *testing.T) {
	const d = 3 * time.Millisecond
	se := &slowReset{scriptedEnv: newScriptedEnv(1, 1), d: d} // every step ends an episode
	r := newRunner(t, envrunner.Config{Env: se, Policies: scriptedPolicies(envrunner.DefaultPolicyID), FragmentLength: 10})
	sampleBatches(t, r, 2)
	ps, steps := r.PerfStats(), r.Counters().Steps
	resets := len(*se.events)
	require.Greater(t, resets, 10)
	resetMs := float64(resets) * d.Seconds() * 1000 / float64(steps) // per step
	assert.GreaterOrEqual(t, ps.MeanRawObsProcessingMs, 0.9*resetMs, "raw obs processing holds the resets")
	assert.Less(t, ps.MeanEnvWaitMs, 0.3*resetMs, "env wait holds no reset")
}

// TestRandomPolicyActionLogpIsUniform: the random policy's batches carry action_logp, the
// log-probability of its uniform sampling, like every other policy's.
func TestRandomPolicyActionLogpIsUniform(t *testing.T) {
	half := spaces.NewBox(0, 1, 2)
	half.High[1] = float32(math.Inf(1)) // drawn as low + Exp(1): density exp(-(x-low))
	for _, tc := range []struct {
		name  string
		space spaces.Space
		want  func(act []float32) float64
	}{
		{"Discrete", &spaces.Discrete{N: 2}, func([]float32) float64 { return -math.Log(2) }},
		{"MultiDiscrete", &spaces.MultiDiscrete{Nvec: []int64{3, 4}}, func([]float32) float64 { return -math.Log(12) }},
		{"MultiBinary", &spaces.MultiBinary{N: 3}, func([]float32) float64 { return -3 * math.Log(2) }},
		{"Box", spaces.NewBox(-2, 2, 3), func([]float32) float64 { return -3 * math.Log(4) }},
		{"Box half-bounded", half, func(a []float32) float64 { return -math.Log(1) - float64(a[1]) }},
		{"Tuple", &spaces.Tuple{Spaces: []spaces.Space{&spaces.Discrete{N: 5}, spaces.NewBox(0, 0.5, 1)}},
			func([]float32) float64 { return -math.Log(5) - math.Log(0.5) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			se := newScriptedEnv(2, 5)
			r := newRunner(t, envrunner.Config{Env: se, NumEnvs: 2, FragmentLength: 6, Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{
				envrunner.DefaultPolicyID: {Random: true, ObservationSpace: spaces.NewBox(-1e6, 1e6, 4), ActionSpace: tc.space}}})
			b := sampleBatches(t, r, 1)[0].PolicyBatches[envrunner.DefaultPolicyID]
			require.NoError(t, b.Validate())
			require.Len(t, b.ActionLogp, b.Count)
			for i := range b.Count {
				assert.InDelta(t, tc.want(envrunner.Row(b.Actions, b.ActionWidth, i)), b.ActionLogp[i], 1e-5, "row %d", i)
			}
			assert.Empty(t, b.ActionDistInputs)
			assert.Empty(t, b.VfPreds)
		})
	}
}

// TestInfosColumn: a batch's infos are RLlib's, the info reported with each row's new_obs
// (SingleAgentEpisode's infos[1:]: the info after stepping), nil for rows without one; a
// batch whose environment reported none has no infos at all (nothing per row).
func TestInfosColumn(t *testing.T) {
	agents := []env.AgentID{"a", "b"}
	for _, mode := range []string{envrunner.TruncateEpisodes, envrunner.CompleteEpisodes} {
		t.Run(mode, func(t *testing.T) {
			se := newScriptedEnv(2, 7, agents...)
			se.skip = func(t, k int) bool { return k == 1 && t%2 == 1 }
			se.info = func(e, ep, t, k int) env.Info {
				if (t+k)%3 != 0 {
					return nil
				}
				return env.Info{"e": e, "ep": ep, "t": t, "k": k}
			}
			r := newRunner(t, envrunner.Config{Env: se, NumEnvs: 2, Policies: scriptedPolicies("p"),
				PolicyMapping:  func(env.AgentID, *envrunner.Episode) envrunner.PolicyID { return "p" },
				FragmentLength: 4, BatchMode: mode})
			withInfo := 0
			for _, m := range sampleBatches(t, r, 6) {
				b := m.PolicyBatches["p"]
				require.NoError(t, b.Validate())
				require.Len(t, b.Infos, b.Count, "rows with infos in every fragment")
				for i := range b.Count {
					o := envrunner.Row(b.NewObs, b.ObsWidth, i) // the observation the info came with
					e, ep, tt, k := int(o[0]), int(o[1]), int(o[2]), int(o[3])
					if b.Terminateds[i] && k == 1 && tt%2 == 1 {
						// b's made-up final row (its last observation repeated): no info came.
						assert.Nil(t, b.Infos[i], "row %d", i)
						continue
					}
					if (tt+k)%3 != 0 {
						assert.Nil(t, b.Infos[i], "row %d", i)
						continue
					}
					withInfo++
					assert.Equal(t, env.Info{"e": e, "ep": ep, "t": tt, "k": k}, b.Infos[i], "row %d", i)
				}
			}
			assert.Positive(t, withInfo)
		})
	}
	t.Run("none", func(t *testing.T) {
		r := newRunner(t, envrunner.Config{Env: newScriptedEnv(2, 5), NumEnvs: 2, Policies: scriptedPolicies(envrunner.DefaultPolicyID), FragmentLength: 4})
		for _, m := range sampleBatches(t, r, 3) {
			assert.Empty(t, m.PolicyBatches[envrunner.DefaultPolicyID].Infos)
		}
	})
}

// informing is an Env that reports an info with every third step's observation.
type informing struct {
	env.Env
	steps int
}

func (e *informing) Step(action, obs []float32) (env.StepResult, error) {
	r, err := e.Env.Step(action, obs)
	if e.steps++; e.steps%3 == 0 {
		r.Info = env.Info{"step": e.steps}
	}
	return r, err
}

// TestInfosColumnColumnar: under the columnar protocol a row with an info leaves the fast
// path, and the batches equal the row protocol's, infos included.
func TestInfosColumnColumnar(t *testing.T) {
	run := func(hide bool) []*envrunner.MultiAgentBatch {
		v, err := env.NewVectorEnv(func(int) (env.Env, error) {
			e, err := env.Make("CartPole-v1", env.Config{"max_episode_steps": 11})
			return &informing{Env: e.Env()}, err
		}, 3)
		require.NoError(t, err)
		var be env.BaseEnv
		be, err = env.NewVectorBaseEnv(v, env.BaseEnvOptions{Seed: env.WithSeed(5)})
		require.NoError(t, err)
		if hide {
			be = hidden{be}
		} else {
			_, ok := be.(env.Columnar)
			require.True(t, ok)
		}
		r := newRunner(t, envrunner.Config{Env: be, NumEnvs: 3, FragmentLength: 5, Seed: 2, Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{
			envrunner.DefaultPolicyID: {Random: true, ObservationSpace: spaces.NewBox(-1e9, 1e9, 4), ActionSpace: &spaces.Discrete{N: 2}}}})
		return sampleBatches(t, r, 6)
	}
	cols, rows := run(false), run(true)
	infos := 0
	for k := range cols {
		b := cols[k].PolicyBatches[envrunner.DefaultPolicyID]
		require.Equal(t, rows[k].PolicyBatches[envrunner.DefaultPolicyID], b, "fragment %d", k)
		for _, info := range b.Infos {
			if info != nil {
				infos++
			}
		}
	}
	assert.Positive(t, infos)
}

// TestRunIDSeparatesEpisodeIDs: runners with the same seed and another RunID number their
// episodes differently (runspec's TestEpsIDUniqueAcrossRuns checks the ids it derives);
// the same RunID gives the same ids; PoliciesRunID tells policies and action settings apart.
func TestRunIDSeparatesEpisodeIDs(t *testing.T) {
	first := func(id uint64) int64 {
		r := newRunner(t, envrunner.Config{Env: newScriptedEnv(1, 3), Policies: scriptedPolicies(envrunner.DefaultPolicyID),
			FragmentLength: 2, Seed: 7, RunID: id})
		return sampleBatches(t, r, 1)[0].PolicyBatches[envrunner.DefaultPolicyID].EpsID[0]
	}
	assert.Equal(t, first(1), first(1))
	assert.NotEqual(t, first(1), first(2))
	assert.NotEqual(t, first(0), first(1))
	pols := scriptedPolicies("p")
	id := envrunner.PoliciesRunID(pols)
	assert.Equal(t, id, envrunner.PoliciesRunID(scriptedPolicies("p")))
	assert.NotEqual(t, id, envrunner.PoliciesRunID(scriptedPolicies("q")), "another policy id")
	explore := pols["p"]
	explore.Action.Explore = true
	assert.NotEqual(t, id, envrunner.PoliciesRunID(map[envrunner.PolicyID]envrunner.PolicyConfig{"p": explore}), "another action setting")
}
