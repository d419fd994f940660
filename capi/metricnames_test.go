package main

import (
	"encoding/json"
	"slices"
	"testing"
	"unsafe"

	"github.com/onnxrl/sampler/envrunner"
)

// TestSamplerMetricsUseRLlibNewAPIStackNames: every key of onnxrl_sampler_metrics' JSON is a
// name of RLlib's new API stack (envrunner.NewAPIStackMetrics) or one of the sampler's own
// (batches, perf; docs/metrics.md), and no old-stack name is among them.
func TestSamplerMetricsUseRLlibNewAPIStackNames(t *testing.T) {
	needSamplerRuntime(t)
	s := mustOpenSampler(t, `{"env":"CartPole-v1","num_envs":4,"fragment_length":50,"model":"random"}`)
	for range 3 {
		if _, _, err := s.sample(); err != nil {
			t.Fatal(err)
		}
	}
	p, n, err := s.metrics()
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(unsafe.Slice((*byte)(unsafe.Pointer(p)), n), &raw); err != nil {
		t.Fatal(err)
	}
	for k := range raw {
		if !slices.Contains(envrunner.NewAPIStackMetrics, k) && k != "batches" && k != "perf" {
			t.Errorf("key %q is neither RLlib's new API stack's nor documented as the sampler's own", k)
		}
	}
	for _, k := range []string{envrunner.NumEnvStepsSampledLifetime, envrunner.NumAgentStepsSampledLifetime,
		envrunner.NumEpisodesLifetime, envrunner.NumEpisodes, envrunner.NumEnvStepFailures, envrunner.EpisodeReturnMean,
		envrunner.EpisodeReturnMin, envrunner.EpisodeReturnMax, envrunner.EpisodeLenMean} {
		if _, ok := raw[k]; !ok {
			t.Errorf("no %q in %v", k, raw)
		}
	}
	for _, old := range []string{"env_steps", "agent_steps", "episodes", "num_faulty_episodes", "new_episodes", "episode_reward_mean"} {
		if _, ok := raw[old]; ok {
			t.Errorf("old name %q in %v", old, raw)
		}
	}
}
