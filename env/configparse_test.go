package env_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
)

func TestParseConfig(t *testing.T) {
	for in, want := range map[string]env.Config{
		"":                    {},
		"a=1,b=x":             {"a": "1", "b": "x"},
		` a = 1 , b = "x,y" `: {"a": "1", "b": `"x,y"`},
		`observation_space={"type":"Box","low":-1,"high":1,"shape":[3]},episode_len=10`: {
			"observation_space": `{"type":"Box","low":-1,"high":1,"shape":[3]}`, "episode_len": "10"},
		`{"num_agents": 3, "observation_space": {"type": "Discrete", "n": 4}}`: {
			"num_agents": 3.0, "observation_space": map[string]any{"type": "Discrete", "n": 4.0}},
		`{}`: {},
	} {
		got, err := env.ParseConfig(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"a", "a=1,a=2", "=1", `{"a":`, `{"a": 1} x`, "[1]"} {
		_, err := env.ParseConfig(in)
		assert.Error(t, err, in)
	}
}

// TestRandomEnvJSONConfig: the documented RandomEnv keys work from the command line's form.
func TestRandomEnvJSONConfig(t *testing.T) {
	for _, s := range []string{
		`{"observation_space": {"type": "Box", "low": -1, "high": 1, "shape": [3]}, "action_space": {"type": "Discrete", "n": 5}}`,
		`observation_space={"type":"Box","low":-1,"high":1,"shape":[3]},action_space={"type":"Discrete","n":5}`,
	} {
		cfg, err := env.ParseConfig(s)
		require.NoError(t, err, s)
		e, err := env.Make("RandomEnv", cfg)
		require.NoError(t, err, s)
		ee := e.Env()
		assert.Equal(t, "Box", ee.ObservationSpace().Type(), s)
		assert.Equal(t, 3, ee.ObservationSpace().FlatDim(), s)
		assert.Equal(t, "Discrete", ee.ActionSpace().Type(), s)
	}
}

func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{"a=1,b=2", `{"a": [1, {"b": "c,d"}]}`, `x={"a":"\"}"},y=2`, "", "=", "{"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := env.ParseConfig(s)
		if err == nil && cfg == nil {
			t.Fatalf("ParseConfig(%q): nil config without an error", s)
		}
	})
}
