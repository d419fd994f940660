package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/scaleout"
)

// summaryOwnKeys are the keys of sample run's summary that RLlib has no metric for: the run's
// settings, its wall time, the files and what went into them (docs/metrics.md).
var summaryOwnKeys = []string{"env", "model", "num_envs", "workers", "explore", "seed", "seconds", "perf",
	"out", "batches", "rows", "interrupted"}

// oldStackNames are RLlib's old API stack's names for what the summary reports: none may
// appear beside the new stack's.
var oldStackNames = []string{"episode_reward_mean", "episode_reward_min", "episode_reward_max", "num_faulty_episodes",
	"episodes_this_iter", "episodes_total", "num_env_steps_sampled", "num_agent_steps_sampled", "timesteps_total",
	"env_steps", "agent_steps", "episodes", "steps_per_sec"}

// TestSummaryUsesRLlibNewAPIStackNames: every key of sample run --json is a name of RLlib's new
// API stack (envrunner.NewAPIStackMetrics) or one of the summary's own, documented ones, and
// none is an old-stack name.
func TestSummaryUsesRLlibNewAPIStackNames(t *testing.T) {
	needRuntime(t)
	code, out, errs := runCLI("run", "--json", "--steps", "300", "--num-envs", "2")
	require.Equal(t, 0, code, errs)
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &raw))
	for k := range raw {
		assert.True(t, slices.Contains(envrunner.NewAPIStackMetrics, k) || slices.Contains(summaryOwnKeys, k), "key %q is neither RLlib's nor documented as the summary's own", k)
		assert.NotContains(t, oldStackNames, k)
	}
	for _, k := range envrunner.NewAPIStackMetrics {
		if k != envrunner.NumEpisodes { // episodes since the last report: the C API's metrics only
			assert.Contains(t, raw, k)
		}
	}
}

// TestWorkerMetricsUseRLlibNewAPIStackNames: sample worker's Prometheus episode metrics are
// sample_worker_ + RLlib's new API stack names, no old-stack name among them.
func TestWorkerMetricsUseRLlibNewAPIStackNames(t *testing.T) {
	var m workerMetrics
	m.ended([]envrunner.RolloutMetrics{{EpisodeReturn: 3, EpisodeLength: 3}, {Faulty: true}})
	var b strings.Builder
	m.write(&b, scaleout.PublisherStats{})
	for _, k := range []string{envrunner.NumEpisodesLifetime, envrunner.NumEnvStepFailures, envrunner.EpisodeReturnMean, envrunner.EpisodeLenMean} {
		assert.Regexp(t, `(?m)^sample_worker_`+k+` \S+$`, b.String())
	}
	for _, old := range oldStackNames {
		assert.NotRegexp(t, `(?m)^sample_worker_`+old+`(_total)? `, b.String())
	}
	assert.NotContains(t, b.String(), "sample_worker_episodes_total")
}
