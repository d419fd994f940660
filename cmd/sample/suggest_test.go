package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestClosest(t *testing.T) {
	envs := []string{"Acrobot-v1", "CartPole-v1", "MountainCar-v0", "Pendulum-v1", "StatelessCartPole"}
	for in, want := range map[string]string{"CartPol-v1": "CartPole-v1", "cartpole-v1": "CartPole-v1", "Pendulm-v1": "Pendulum-v1",
		"CartPoel-v1": "CartPole-v1", "Acrobot": "Acrobot-v1", "Breakout-v5": "", "x": ""} {
		got, ok := closest(in, envs)
		assert.Equal(t, want != "", ok, in)
		assert.Equal(t, want, map[bool]string{true: got, false: ""}[ok], in)
	}
	assert.Equal(t, 1, editDistance("rnu", "run"), "a swap counts once")
	assert.Equal(t, 3, editDistance("", "abc"))
}

// TestFirstHour: the stumbles of a first session end with a short message that helps.
func TestFirstHour(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--env", "CartPol-v1"}, 2, `unknown environment "CartPol-v1" (did you mean CartPole-v1?)`},
		{[]string{"run", "--num-env", "3"}, 2, "sample run: unknown flag --num-env; did you mean --num-envs?\n"},
		{[]string{"run", "--steps", "0"}, 2, "--steps 0: want at least 1"},
		{[]string{"run", "--episodes", "0"}, 2, "--episodes 0: want at least 1"},
		{[]string{"rnu"}, 2, `unknown command "rnu" (did you mean run?)`},
		{[]string{"run", "--env", "RandomEnv", "--env-config", `{"observation_space": {"type": "Box", "low": -1, "high": 1, "shape": [3]`}, 2, "--env-config"},
	} {
		code, _, errs := runCLI(tc.args...)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, errs)
		assert.Contains(t, errs, tc.want, tc.args)
	}
	code, out, errs := runCLI("run", "--list-envs")
	assert.Equal(t, 0, code, errs)
	for _, want := range []string{"CartPole-v1", "Discrete(2)", "cartpole_mlp", "multi-agent (2)", "lstm_policy", "Box(-2.0, 2.0, (1,), float32)"} {
		assert.Contains(t, out, want)
	}
}

// TestEnvConfigJSON: RandomEnv's documented keys, as JSON, from the command line.
func TestEnvConfigJSON(t *testing.T) {
	s := runJSON(t, "--env", "RandomEnv", "--model", "random", "--steps", "100",
		"--env-config", `{"observation_space": {"type": "Box", "low": -1, "high": 1, "shape": [3]}, "action_space": {"type": "Discrete", "n": 5}}`)
	assert.Equal(t, int64(100), s.EnvSteps)
}
