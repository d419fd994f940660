package env_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
)

func init() {
	env.Register("test-made-vector", func(env.Config) (any, error) {
		return env.NewVectorEnv(func(int) (env.Env, error) { return env.NewRandomEnv(env.RandomEnvConfig{}) }, 2)
	})
	env.Register("test-made-base", func(env.Config) (any, error) {
		return env.NewBaseEnv(func(int) (env.Env, error) { return env.NewRandomEnv(env.RandomEnvConfig{}) }, env.BaseEnvOptions{NumEnvs: 2})
	})
	env.Register("test-made-junk", func(env.Config) (any, error) { return 42, nil })
	env.Register("test-made-nil", func(env.Config) (any, error) { return nil, nil })
}

// TestMakeKinds: Make says which kind it made and gives it as that kind only.
func TestMakeKinds(t *testing.T) {
	for _, c := range []struct {
		name string
		kind env.Kind
	}{
		{"RandomEnv", env.KindEnv},
		{"RandomMultiAgentEnv", env.KindMultiAgent},
		{"test-made-vector", env.KindVector},
		{"test-made-base", env.KindBase},
	} {
		t.Run(c.name, func(t *testing.T) {
			made, err := env.Make(c.name, nil)
			require.NoError(t, err)
			assert.Equal(t, c.kind, made.Kind())
			assert.Equal(t, c.kind == env.KindEnv, made.Env() != nil)
			assert.Equal(t, c.kind == env.KindMultiAgent, made.MultiAgent() != nil)
			assert.Equal(t, c.kind == env.KindVector, made.Vector() != nil)
			assert.Equal(t, c.kind == env.KindBase, made.Base() != nil)
			assert.NotNil(t, made.Value())
		})
	}
	for name, want := range map[string]string{
		"test-made-junk": "env: make test-made-junk: the maker returned int, which is not an Env, MultiAgentEnv, VectorEnv or BaseEnv",
		"test-made-nil":  "env: make test-made-nil: the maker returned nil",
		"no-such-env":    `env: unknown environment "no-such-env"`,
	} {
		made, err := env.Make(name, nil)
		assert.ErrorContains(t, err, want)
		assert.Zero(t, made.Kind())
		assert.Nil(t, made.Env())
		assert.Nil(t, made.Value())
	}
	assert.Equal(t, "MultiAgentEnv", env.KindMultiAgent.String())
	assert.Equal(t, "Kind(9)", env.Kind(9).String())
}

// TestMakeIntoAdapters: what Make returns goes into ToBaseEnv and NewRemoteVectorEnv as the
// environment it holds (a closure returning Make's result compiles as func(int) (any, error)).
func TestMakeIntoAdapters(t *testing.T) {
	mk := func(int) (any, error) { return env.Make("RandomEnv", env.Config{"episode_len": 3}) }
	be, err := env.ToBaseEnv(mk, env.BaseEnvOptions{NumEnvs: 3})
	require.NoError(t, err)
	require.Len(t, be.(env.SubEnvironmentser).SubEnvironments(), 3)
	_, isRandom := be.(env.SubEnvironmentser).SubEnvironments()[2].(*env.RandomEnv)
	assert.True(t, isRandom, "sub-environment 2 is the RandomEnv, not an env.Environment")
	require.NoError(t, be.Stop())

	r, err := env.NewRemoteVectorEnv(mk, env.RemoteVectorEnvOptions{BaseEnvOptions: env.BaseEnvOptions{NumEnvs: 2}})
	require.NoError(t, err)
	require.NoError(t, r.Stop())

	be, err = env.MakeBaseEnv("RandomMultiAgentEnv", env.Config{"num_agents": 3}, env.BaseEnvOptions{NumEnvs: 2, Seed: env.WithSeed(1)})
	require.NoError(t, err)
	var b env.Batch
	require.NoError(t, be.Poll(&b))
	assert.Len(t, b.Agents, 6, "2 sub-environments of 3 agents")
	require.NoError(t, be.Stop())
	_, err = env.MakeBaseEnv("test-made-junk", nil, env.BaseEnvOptions{})
	assert.ErrorContains(t, err, "not an Env, MultiAgentEnv, VectorEnv or BaseEnv")
}

// Make a registered environment and use it as the kind it is.
func ExampleMake() {
	made, err := env.Make("RandomEnv", env.Config{"episode_len": 2}) // episodes truncated at 2 steps
	if err != nil {
		panic(err)
	}
	fmt.Println("kind:", made.Kind())
	e := made.Env() // nil for another kind
	obs := make([]float32, e.ObservationSpace().Size())
	if _, err := e.Reset(env.WithSeed(1), obs); err != nil {
		panic(err)
	}
	for {
		res, err := e.Step([]float32{0}, obs)
		if err != nil {
			panic(err)
		}
		if res.Terminated || res.Truncated {
			fmt.Println("episode over, truncated:", res.Truncated)
			break
		}
	}
	// Output:
	// kind: Env
	// episode over, truncated: true
}

// A registered environment as the BaseEnv a runner steps: 4 sub-environments, seeded 1, 2, ...
func ExampleMakeBaseEnv() {
	be, err := env.MakeBaseEnv("RandomEnv", nil, env.BaseEnvOptions{NumEnvs: 4, Seed: env.WithSeed(1)})
	if err != nil {
		panic(err)
	}
	defer be.Stop()
	var b env.Batch
	if err := be.Poll(&b); err != nil { // the first observation of every sub-environment
		panic(err)
	}
	fmt.Println("ready agents:", len(b.Agents))
	// Output: ready agents: 4
}
