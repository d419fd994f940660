package envrunner_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
)

// faultTracker tells faulty episodes from the callbacks: OnEpisodeEnd sees them with Err
// set. It records the number of the fragment during whose sampling each ended: the fault was
// found then.
type faultTracker struct {
	faults  map[int64]int // faulty episode -> fragment in which it ended
	samples int
}

func newFaultTracker() *faultTracker { return &faultTracker{faults: map[int64]int{}} }

func (f *faultTracker) OnEpisodeEnd(_ *envrunner.Runner, ep *envrunner.Episode) {
	if ep.Err != nil {
		f.faults[ep.ID] = f.samples
	}
}

func (f *faultTracker) OnSampleResult(*envrunner.Runner, *envrunner.MultiAgentBatch) { f.samples++ }

// faulty returns the faulty episodes with the fragment in which each fault was found.
func (f *faultTracker) faulty() map[int64]int { return f.faults }

// TestFaultyEpisodes: sub-environments that fail in Step (p_error) are restarted; their
// episodes are counted as faulty, leave no rows (complete_episodes: none at all;
// truncate_episodes: none after the fault, earlier fragments already went out), reach
// OnEpisodeEnd with Err, have metrics marked Faulty, and sampling goes on.
func TestFaultyEpisodes(t *testing.T) {
	for _, mode := range []string{envrunner.CompleteEpisodes, envrunner.TruncateEpisodes} {
		t.Run(mode, func(t *testing.T) {
			be := makeEnv(t, "RandomEnv", env.Config{"p_error": 0.03, "min_episode_len": 5, "max_episode_len": 15, "reward": 1},
				envOpts{numEnvs: 4, seed: 3, restart: true})
			ft := newFaultTracker()
			r := newRunner(t, envrunner.Config{Env: be, NumEnvs: 4, Policies: randomPolicies(envrunner.DefaultPolicyID),
				FragmentLength: 10, BatchMode: mode, Callbacks: ft})
			seenAt := map[int64][]int{} // fragments with rows of each episode
			batches := sampleBatches(t, r, 10)
			for k, mb := range batches {
				b := mb.PolicyBatches[envrunner.DefaultPolicyID]
				for _, c := range checkChunks(t, b) {
					seenAt[c.epsID] = append(seenAt[c.epsID], k)
					if mode == envrunner.CompleteEpisodes {
						assert.Equal(t, int32(0), b.T[c.start])
						assert.True(t, done(b, c.end-1))
					}
				}
			}
			faulty := ft.faulty()
			require.NotEmpty(t, faulty, "no fault injected; raise p_error")
			c := r.Counters()
			assert.Equal(t, int64(len(faulty)), c.FaultyEpisodes)
			for id, at := range faulty {
				for _, k := range seenAt[id] {
					assert.Less(t, k, at, "faulty episode %d (fault found while sampling fragment %d) has rows in fragment %d", id, at, k)
					assert.NotEqual(t, envrunner.CompleteEpisodes, mode, "faulty episode %d has rows", id)
				}
			}
			ms := r.Metrics(nil)
			require.NotEmpty(t, ms)
			flagged := 0
			for _, m := range ms {
				_, bad := faulty[m.EpisodeID]
				assert.Equal(t, bad, m.Faulty, "metrics of episode %d", m.EpisodeID)
				if m.Faulty {
					flagged++
				}
				assert.Equal(t, float64(m.EpisodeLength), m.EpisodeReturn)
			}
			assert.Equal(t, len(faulty), flagged)
			assert.Equal(t, int64(len(ms)-flagged), c.Episodes)
		})
	}
}

// TestResetFailure: a sub-environment whose reset fails (every second reset of an instance)
// is restarted and reset again in the next step. The episode that ended before the failed
// reset is complete: it keeps its rows and its metrics; the failed reset counts as a faulty
// episode, with a Faulty metrics entry and no OnEpisodeEnd (no episode started), as in RLlib.
func TestResetFailure(t *testing.T) {
	const life = 5
	be := makeEnv(t, "RandomEnv", env.Config{"fail_at_reset": 2, "episode_len": life, "reward": 1}, envOpts{numEnvs: 2, seed: 1, restart: true})
	ft := newFaultTracker()
	r := newRunner(t, envrunner.Config{Env: be, NumEnvs: 2, Policies: randomPolicies(envrunner.DefaultPolicyID),
		FragmentLength: 20, Callbacks: ft})
	rows := map[int64]int{}
	total := 0
	for _, mb := range sampleBatches(t, r, 4) {
		b := mb.PolicyBatches[envrunner.DefaultPolicyID]
		assert.Equal(t, 40, mb.EnvSteps)
		assert.Equal(t, 40, b.Count)
		for _, c := range checkChunks(t, b) {
			rows[c.epsID] += c.len()
		}
		total += b.Count
	}
	assert.Empty(t, ft.faulty(), "every episode that was followed by another ended")
	var ms []envrunner.RolloutMetrics
	failed := 0
	for _, m := range r.Metrics(nil) {
		if m.Faulty {
			failed++
			assert.Zero(t, m.EpisodeID, "a reset that failed has no episode")
			continue
		}
		ms = append(ms, m)
	}
	require.NotEmpty(t, ms)
	for _, m := range ms {
		assert.Equal(t, life, m.EpisodeLength)
		assert.Equal(t, life, rows[m.EpisodeID], "episode %d: rows", m.EpisodeID)
	}
	c := r.Counters()
	assert.Equal(t, int64(len(ms)), c.Episodes)
	assert.Equal(t, int64(failed), c.FaultyEpisodes)
	assert.Equal(t, c.Episodes, c.FaultyEpisodes, "one failed reset after every episode")
	assert.Equal(t, int64(total), c.EnvSteps)
	assert.Equal(t, c.EnvSteps, c.AgentSteps)
}

// Without restart_failed_sub_environments a failure comes back from Sample, with the
// sub-environment and the operation that failed.
func TestFaultWithoutRestart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     env.Config
		context string
		op      string
		panics  bool
	}{
		{name: "step error", cfg: env.Config{"fail_at_step": 7}, context: "envrunner: send actions", op: "step"},
		{name: "step panic", cfg: env.Config{"fail_at_step": 3, "fail_by_panic": true}, context: "envrunner: send actions", op: "step", panics: true},
		{name: "first reset", cfg: env.Config{"fail_at_reset": 1}, context: "envrunner: poll", op: "reset"},
		{name: "later reset", cfg: env.Config{"fail_at_reset": 2, "episode_len": 4}, context: "envrunner: reset sub-environment", op: "reset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRunner(t, envrunner.Config{Env: makeEnv(t, "RandomEnv", tc.cfg, envOpts{numEnvs: 2}), NumEnvs: 2,
				Policies: randomPolicies(envrunner.DefaultPolicyID), FragmentLength: 50})
			var mb envrunner.MultiAgentBatch
			err := r.Sample(&mb)
			require.Error(t, err)
			assert.ErrorIs(t, err, env.ErrInjected)
			assert.Contains(t, err.Error(), tc.context)
			var se *env.SubEnvError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tc.op, se.Op)
			var pe *env.PanicError
			assert.Equal(t, tc.panics, errors.As(err, &pe))
			assert.Zero(t, r.Counters().FaultyEpisodes)
		})
	}
}
