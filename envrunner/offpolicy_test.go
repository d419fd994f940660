package envrunner_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
)

// offKey identifies the observation at which an action was taken.
type offKey struct {
	env int
	obs string
}

func keyOf(e int, obs []float32) offKey { return offKey{e, fmt.Sprint(obs)} }

// steeringEnv wraps a single-agent BaseEnv with Discrete(2) actions like an external
// simulator that sometimes acts on its own: at every third observation of each
// sub-environment it takes its own action (alternately 0 and 1), reports it with that
// observation as OffPolicyAction (ExternalEnv's log_action) and sends it instead of the
// runner's; and every third episode of each sub-environment starts with training disabled.
type steeringEnv struct {
	env.BaseEnv
	seen, resets, own map[env.EnvID]int
	pending           map[env.EnvID][]float32 // the own action of the last observation
	taken             map[offKey]float32      // own actions by the observation they were taken at
	buf               []env.Action
}

func newSteeringEnv(inner env.BaseEnv) *steeringEnv {
	return &steeringEnv{BaseEnv: inner, seen: map[env.EnvID]int{}, resets: map[env.EnvID]int{}, own: map[env.EnvID]int{},
		pending: map[env.EnvID][]float32{}, taken: map[offKey]float32{}}
}

func (s *steeringEnv) mark(dst *env.Batch, agents, envs int) {
	for i := envs; i < len(dst.Envs); i++ {
		st := &dst.Envs[i]
		if st.Reset {
			s.resets[st.Env]++
			st.TrainingDisabled = s.resets[st.Env]%3 == 2
		}
	}
	for i := agents; i < len(dst.Agents); i++ {
		a := &dst.Agents[i]
		delete(s.pending, a.Env)
		if a.Terminated || a.Truncated {
			continue
		}
		s.seen[a.Env]++
		if s.seen[a.Env]%3 == 1 {
			s.own[a.Env]++
			own := []float32{float32(s.own[a.Env] % 2)}
			a.OffPolicyAction = own
			s.pending[a.Env] = own
			s.taken[keyOf(a.Env, a.Obs)] = own[0]
		}
	}
}

func (s *steeringEnv) Poll(dst *env.Batch) error {
	agents, envs := len(dst.Agents), len(dst.Envs)
	err := s.BaseEnv.Poll(dst)
	s.mark(dst, agents, envs)
	return err
}

func (s *steeringEnv) TryReset(e env.EnvID, seed env.Seed, dst *env.Batch) (bool, error) {
	agents, envs := len(dst.Agents), len(dst.Envs)
	delete(s.pending, e)
	async, err := s.BaseEnv.TryReset(e, seed, dst)
	s.mark(dst, agents, envs)
	return async, err
}

func (s *steeringEnv) SendActions(actions []env.Action) error {
	s.buf = append(s.buf[:0], actions...)
	for i := range s.buf {
		a := &s.buf[i]
		if own := s.pending[a.Env]; own != nil {
			a.Action = own
		}
	}
	return s.BaseEnv.SendActions(s.buf)
}

// trainingTracker records the episodes started with training disabled.
type trainingTracker struct {
	disabled, enabled map[int64]bool
}

func (c *trainingTracker) OnEpisodeStart(_ *envrunner.Runner, ep *envrunner.Episode) {
	if ep.TrainingEnabled {
		c.enabled[ep.ID] = true
	} else {
		c.disabled[ep.ID] = true
	}
}

// TestOffPolicyActionsAndTrainingDisabled: the batch records the environment's own actions
// (OffPolicyAction) on the rows where it took them, the policy's elsewhere; episodes started
// with training disabled leave no rows but run, end and report metrics.
func TestOffPolicyActionsAndTrainingDisabled(t *testing.T) {
	p := bundledPolicy(t, "cartpole_mlp")
	for _, mode := range []string{envrunner.TruncateEpisodes, envrunner.CompleteEpisodes} {
		t.Run(mode, func(t *testing.T) {
			se := newSteeringEnv(makeEnv(t, "CartPole-v1", env.Config{"max_episode_steps": 40}, envOpts{numEnvs: 3, seed: 2}))
			cb := &trainingTracker{disabled: map[int64]bool{}, enabled: map[int64]bool{}}
			r := newRunner(t, envrunner.Config{Env: se, NumEnvs: 3, Policies: singlePolicy(p, true), FragmentLength: 30,
				BatchMode: mode, Callbacks: cb})
			model := newCartPoleModel(t)
			var own, policy int
			for _, mb := range sampleBatches(t, r, 4) {
				b := mb.PolicyBatches[envrunner.DefaultPolicyID]
				assert.Equal(t, b.Count, mb.AgentSteps)
				for _, c := range checkChunks(t, b) {
					require.False(t, cb.disabled[c.epsID], "episode %d has training disabled but has rows", c.epsID)
					require.True(t, cb.enabled[c.epsID])
				}
				for i := range b.Count {
					obs := envrunner.Row(b.Obs, 4, i)
					// The recorded action is the one the environment executed.
					next, _ := model.next(t, obs, b.Actions[i])
					assert.InDeltaSlice(t, next, envrunner.Row(b.NewObs, 4, i), 1e-5, "row %d: new_obs does not follow from the recorded action", i)
					if a, ok := se.taken[keyOf(int(b.EnvID[i]), obs)]; ok {
						own++
						assert.Equal(t, a, b.Actions[i], "row %d: the environment's own action", i)
					} else {
						policy++
						d := envrunner.Row(b.ActionDistInputs, 2, i)
						assert.InDelta(t, logSoftmaxAt(d, int(b.Actions[i])), float64(b.ActionLogp[i]), 1e-5, "row %d: the policy's action", i)
					}
				}
			}
			assert.Positive(t, own, "no rows with the environment's own action")
			assert.Greater(t, policy, own)
			require.NotEmpty(t, cb.disabled)
			ms := r.Metrics(nil)
			reported := 0
			for _, m := range ms {
				if cb.disabled[m.EpisodeID] {
					reported++
					assert.Positive(t, m.EpisodeLength)
					assert.Equal(t, float64(m.EpisodeLength), m.EpisodeReturn)
				}
			}
			assert.Positive(t, reported, "episodes with training disabled have metrics")
			assert.Equal(t, int64(len(ms)), r.Counters().Episodes)
		})
	}
}
