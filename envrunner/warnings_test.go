package envrunner_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
)

// logTo returns a logger writing text lines into buf.
func logTo(buf *bytes.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(buf, nil)) }

// One agent buffering more than max(1000, 10*FragmentLength) observations is warned about
// once (complete_episodes with episodes that do not end); truncate_episodes cuts them in
// time and does not warn.
func TestLargeBatchWarning(t *testing.T) {
	for _, tc := range []struct {
		mode string
		warn bool
	}{{envrunner.CompleteEpisodes, true}, {envrunner.TruncateEpisodes, false}} {
		t.Run(tc.mode, func(t *testing.T) {
			var buf bytes.Buffer
			r := newRunner(t, envrunner.Config{Env: makeEnv(t, "RandomEnv", env.Config{"episode_len": 100000}, envOpts{numEnvs: 2}), NumEnvs: 2,
				Policies: randomPolicies(envrunner.DefaultPolicyID), FragmentLength: 20, BatchMode: tc.mode, Logger: logTo(&buf)})
			var mb envrunner.MultiAgentBatch
			for r.Counters().Steps < 2500 {
				if tc.warn { // no episode ends: step without taking
					require.NoError(t, r.Step())
				} else {
					require.NoError(t, r.Sample(&mb))
				}
			}
			n := strings.Count(buf.String(), "level=WARN")
			if tc.warn {
				assert.Equal(t, 1, n, "one warning: %s", buf.String())
				assert.Contains(t, buf.String(), "more than 1000 observations")
			} else {
				assert.Zero(t, n, buf.String())
			}
		})
	}
}

// silentEnv reports its sub-environment every step but never an agent.
type silentEnv struct{}

func (silentEnv) Poll(dst *env.Batch) error {
	dst.Envs = append(dst.Envs, env.EnvStatus{Env: 0})
	return nil
}
func (silentEnv) SendActions([]env.Action) error                         { return nil }
func (silentEnv) TryReset(env.EnvID, env.Seed, *env.Batch) (bool, error) { return false, nil }
func (silentEnv) Stop() error                                            { return nil }

// An environment that steps over 1000 times without reporting any agent is warned about
// once.
func TestIdleEnvironmentWarning(t *testing.T) {
	var buf bytes.Buffer
	r := newRunner(t, envrunner.Config{Env: silentEnv{}, Policies: randomPolicies(envrunner.DefaultPolicyID), Logger: logTo(&buf)})
	for range 1000 {
		require.NoError(t, r.Step())
	}
	assert.Empty(t, buf.String())
	for range 2000 {
		require.NoError(t, r.Step())
	}
	assert.Equal(t, 1, strings.Count(buf.String(), "level=WARN"), buf.String())
	assert.Contains(t, buf.String(), "without ever emitting agent observations")
	assert.Zero(t, r.Counters().EnvSteps)
}
