package envrunner_test

import (
	"testing"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/models"
)

// greedyReturn runs episodes greedy episodes of the bundled policy on the environment
// through the runner (10 sub-environments, no sample collection) and returns the mean, min
// and max return.
func greedyReturn(t *testing.T, model, envName string, episodes int64) (mean, lo, hi float64) {
	t.Helper()
	pol := bundledPolicy(t, model)
	const numEnvs = 10
	ctor := func(int) (any, error) { return env.Make(envName, nil) }
	be, err := env.ToBaseEnv(ctor, env.BaseEnvOptions{NumEnvs: numEnvs, Seed: env.WithSeed(1000)})
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, envrunner.Config{Env: be, NumEnvs: numEnvs, Seed: 7, NoSamples: true, MaxEpisodes: episodes,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: {Policy: pol,
			Action: connectors.ActionConfig{NormalizeActions: true}}}})
	for !r.Done() {
		if err := r.Step(); err != nil {
			t.Fatal(err)
		}
	}
	ms := r.Metrics(nil)
	if int64(len(ms)) != episodes {
		t.Fatalf("%d episodes finished, want %d", len(ms), episodes)
	}
	lo, hi = ms[0].EpisodeReturn, ms[0].EpisodeReturn
	for _, m := range ms {
		mean += m.EpisodeReturn
		lo, hi = min(lo, m.EpisodeReturn), max(hi, m.EpisodeReturn)
	}
	return mean / float64(len(ms)), lo, hi
}

// TestTrainedPolicies checks the greedy returns of the bundled policies trained by
// models/export/train_ppo.py, over 100 episodes each, through the runner: the MLP on
// CartPole-v1 (>= 475), the LSTM on StatelessCartPole (>= 400: its RNN state must be
// carried step to step and reset per episode for that) and the Gaussian on Pendulum-v1
// (>= -400, with normalize_actions).
func TestTrainedPolicies(t *testing.T) {
	if _, err := models.Bundled("cartpole_mlp"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		model, env string
		want       float64
	}{
		{"cartpole_mlp", "CartPole-v1", 475},
		{"lstm_policy", "StatelessCartPole", 400},
		{"pendulum_gaussian", "Pendulum-v1", -400},
	}
	for _, c := range cases {
		t.Run(c.model, func(t *testing.T) {
			mean, lo, hi := greedyReturn(t, c.model, c.env, 100)
			t.Logf("%s on %s: greedy return over 100 episodes: mean %.2f, min %.2f, max %.2f", c.model, c.env, mean, lo, hi)
			if mean < c.want {
				t.Errorf("%s on %s: greedy mean return %.2f, want >= %v", c.model, c.env, mean, c.want)
			}
		})
	}
}
