package externalenv_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/spaces"
)

// episodeRows runs one sampler step at a time until the simulator's single episode is over
// and returns the rows of the policy's batch.
func episodeRows(t *testing.T, be env.BaseEnv, numEnvs int, obsSpace, actSpace spaces.Space, done <-chan error) *envrunner.SampleBatch {
	t.Helper()
	r, err := envrunner.New(envrunner.Config{Env: be, NumEnvs: numEnvs, FragmentLength: 1000, Seed: 1,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: {Random: true,
			ObservationSpace: obsSpace, ActionSpace: actSpace}}})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	for len(r.Metrics(nil)) == 0 { // until the episode has ended
		require.NoError(t, r.Step())
	}
	require.NoError(t, <-done)
	var mb envrunner.MultiAgentBatch
	r.Take(&mb)
	b := mb.PolicyBatches[envrunner.DefaultPolicyID]
	require.NoError(t, b.Validate())
	return b
}

// TestRunnerTruncation: an episode ended with EndEpisodeTruncated leaves its last row
// truncated and not terminated in the Runner's batch; EndEpisode leaves it terminated.
func TestRunnerTruncation(t *testing.T) {
	obsSpace, actSpace := spaces.NewBox(-10, 10, 2), &spaces.Discrete{N: 2}
	for _, truncate := range []bool{false, true} {
		t.Run(map[bool]string{false: "terminated", true: "truncated"}[truncate], func(t *testing.T) {
			e := newEnv(t, externalenv.Options{ObservationSpace: obsSpace, ActionSpace: actSpace})
			done := make(chan error, 1)
			go func() {
				done <- func() error {
					id, err := e.StartEpisode("", true)
					if err != nil {
						return err
					}
					for step := range 3 {
						if _, err := e.GetAction(context.Background(), id, o2(float32(step))); err != nil {
							return err
						}
						if err := e.LogReturns(id, 1, nil); err != nil {
							return err
						}
					}
					if truncate {
						return e.EndEpisodeTruncated(id, o2(3))
					}
					return e.EndEpisode(id, o2(3))
				}()
			}()
			b := episodeRows(t, e, e.NumEnvs(), obsSpace, actSpace, done)
			require.Equal(t, 3, b.Count)
			for i := range 3 {
				assert.Equal(t, o2(float32(i)), envrunner.Row(b.Obs, 2, i))
				assert.Equal(t, o2(float32(i+1)), envrunner.Row(b.NewObs, 2, i))
				last := i == 2
				assert.Equal(t, last && !truncate, b.Terminateds[i], "row %d terminated", i)
				assert.Equal(t, last && truncate, b.Truncateds[i], "row %d truncated", i)
			}
		})
	}
}

// TestRunnerMultiAgentTruncation: EndEpisodeTruncated in a multi-agent episode: the last row
// of an agent that is still playing is truncated, that of an agent marked done is
// terminated.
func TestRunnerMultiAgentTruncation(t *testing.T) {
	obsSpace, actSpace := spaces.NewBox(-10, 10, 2), &spaces.Discrete{N: 2}
	e := newMAEnv(t, externalenv.MultiAgentOptions{ObservationSpace: obsSpace, ActionSpace: actSpace})
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			id, err := e.StartEpisode("", true)
			if err != nil {
				return err
			}
			for step := range 3 {
				v := float32(step)
				if _, err := e.GetAction(context.Background(), id, obsMap{"p": o2(v), "q": o2(-v - 0.5)}); err != nil {
					return err
				}
				dones := map[env.AgentID]bool{"q": step == 2}
				if err := e.LogReturns(id, map[env.AgentID]float64{"p": 1, "q": 2}, dones, nil); err != nil {
					return err
				}
			}
			return e.EndEpisodeTruncated(id, obsMap{"p": o2(3), "q": o2(-3.5)})
		}()
	}()
	b := episodeRows(t, e, e.NumEnvs(), obsSpace, actSpace, done)
	require.Equal(t, 6, b.Count)
	for i := range b.Count {
		obs := envrunner.Row(b.Obs, 2, i)
		q := obs[0] < 0
		last := obs[0] == 2 || obs[0] == -2.5
		assert.Equal(t, last && q, b.Terminateds[i], "row %d (%v) terminated", i, obs)
		assert.Equal(t, last && !q, b.Truncateds[i], "row %d (%v) truncated", i, obs)
		assert.Equal(t, map[bool]float32{false: 1, true: 2}[q], b.Rewards[i])
	}
}
