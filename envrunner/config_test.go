package envrunner_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/spaces"
)

// TestConfigErrors: New rejects bad configurations with an error that names the field and
// what it wants. None of these needs the runtime.
func TestConfigErrors(t *testing.T) {
	ok := randomPolicies(envrunner.DefaultPolicyID)
	for _, tc := range []struct {
		name  string
		cfg   envrunner.Config
		noEnv bool
		want  []string
	}{
		{name: "no env", noEnv: true, cfg: envrunner.Config{Policies: ok}, want: []string{"Config.Env is nil"}},
		{name: "no policies", want: []string{"Policies is empty"}},
		{name: "batch mode", cfg: envrunner.Config{Policies: ok, BatchMode: "whole_episodes"},
			want: []string{`BatchMode "whole_episodes"`, envrunner.TruncateEpisodes, envrunner.CompleteEpisodes}},
		{name: "count steps by", cfg: envrunner.Config{Policies: ok, CountStepsBy: "steps"},
			want: []string{`CountStepsBy "steps"`, envrunner.EnvSteps, envrunner.AgentSteps}},
		{name: "negative fragment", cfg: envrunner.Config{Policies: ok, FragmentLength: -1}, want: []string{"FragmentLength -1"}},
		{name: "negative max seq len", cfg: envrunner.Config{Policies: ok, MaxSeqLen: -3}, want: []string{"MaxSeqLen -3"}},
		{name: "gamma", cfg: envrunner.Config{Policies: ok, GAE: &envrunner.GAE{Gamma: 1.01, Lambda: 0.9}}, want: []string{"GAE", "[0, 1]"}},
		{name: "perf ema > 1", cfg: envrunner.Config{Policies: ok, PerfEMA: 1.5}, want: []string{"PerfEMA"}},
		{name: "perf ema < 0", cfg: envrunner.Config{Policies: ok, PerfEMA: -0.1}, want: []string{"PerfEMA"}},
		{name: "perf ema NaN", cfg: envrunner.Config{Policies: ok, PerfEMA: math.NaN()}, want: []string{"PerfEMA"}},
		{name: "two policies without mapping", cfg: envrunner.Config{Policies: randomPolicies("a", "b")}, want: []string{"2 policies need a PolicyMapping"}},
		{name: "random without spaces", cfg: envrunner.Config{Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{"r": {Random: true}}},
			want: []string{`policy "r"`, "observation and action spaces"}},
		{name: "random with a bad space", cfg: envrunner.Config{Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{
			"r": {Random: true, ObservationSpace: spaces.NewBox(-1, 1, 4), ActionSpace: &spaces.Discrete{N: 0}}}},
			want: []string{`policy "r"`, "action space"}},
		{name: "no model", cfg: envrunner.Config{Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{"m": {}}},
			want: []string{`policy "m"`, "no model"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if !tc.noEnv {
				cfg.Env = makeEnv(t, "RandomEnv", nil, envOpts{})
				defer cfg.Env.Stop()
			}
			r, err := envrunner.New(cfg)
			require.Error(t, err)
			assert.Nil(t, r)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.Regexp(t, "^envrunner: ", err.Error())
		})
	}
}

// The zero values of FragmentLength and NumEnvs mean 200 and 1.
func TestConfigDefaults(t *testing.T) {
	r := newRunner(t, envrunner.Config{Env: makeEnv(t, "RandomEnv", env.Config{"episode_len": 30}, envOpts{}),
		Policies: randomPolicies(envrunner.DefaultPolicyID)})
	var mb envrunner.MultiAgentBatch
	require.NoError(t, r.Sample(&mb))
	assert.Equal(t, 200, mb.EnvSteps)
	assert.Equal(t, 200, mb.PolicyBatches[envrunner.DefaultPolicyID].Count)
	assert.Equal(t, []envrunner.PolicyID{envrunner.DefaultPolicyID}, mb.PolicyIDs())
	assert.Equal(t, 0, r.Worker())
}

// Close stops the environment once; a closed runner's Step and Sample fail.
func TestClose(t *testing.T) {
	be := makeEnv(t, "RandomEnv", nil, envOpts{numEnvs: 2})
	r, err := envrunner.New(envrunner.Config{Env: be, NumEnvs: 2, Policies: randomPolicies("p"), Worker: 3})
	require.NoError(t, err)
	assert.Same(t, be, r.Env())
	assert.Equal(t, 3, r.Worker())
	require.NoError(t, r.Step())
	require.NoError(t, r.Close())
	require.NoError(t, r.Close(), "a second Close")
	assert.ErrorIs(t, be.Poll(&env.Batch{}), env.ErrStopped, "Close stopped the environment")
	err = r.Step()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "closed")
	var mb envrunner.MultiAgentBatch
	require.Error(t, r.Sample(&mb))
}
