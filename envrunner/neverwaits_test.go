package envrunner

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/env/classic"
	"github.com/onnxrl/sampler/spaces"
)

// TestNeverWaits: a runner of a VectorBaseEnv (the columnar protocol) steps every
// sub-environment on Step's goroutine, so a Group locks that goroutine to its thread; one of
// a RemoteVectorEnv, whose sub-environments step on goroutines of their own, or of a
// per-agent BaseEnv, is not locked.
func TestNeverWaits(t *testing.T) {
	const n = 3
	policies := map[PolicyID]PolicyConfig{DefaultPolicyID: {Random: true,
		ObservationSpace: spaces.NewBox(-1, 1, 4), ActionSpace: &spaces.Discrete{N: 2}}}
	makeCartPole := func(int) (any, error) { return classic.NewCartPole(nil) }
	for _, tc := range []struct {
		name  string
		make  func() (env.BaseEnv, error)
		never bool
	}{
		{name: "vector", never: true, make: func() (env.BaseEnv, error) {
			v, err := env.NewVectorEnv(func(int) (env.Env, error) { return classic.NewCartPole(nil) }, n)
			if err != nil {
				return nil, err
			}
			return env.NewVectorBaseEnv(v, env.BaseEnvOptions{})
		}},
		{name: "remote", make: func() (env.BaseEnv, error) {
			return env.NewRemoteVectorEnv(makeCartPole, env.RemoteVectorEnvOptions{BaseEnvOptions: env.BaseEnvOptions{NumEnvs: n}})
		}},
		{name: "per-agent", make: func() (env.BaseEnv, error) {
			return env.ToBaseEnv(makeCartPole, env.BaseEnvOptions{NumEnvs: n})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			be, err := tc.make()
			require.NoError(t, err)
			r, err := New(Config{Env: be, NumEnvs: n, Policies: policies, FragmentLength: 4})
			require.NoError(t, err)
			defer r.Close()
			assert.Equal(t, tc.never, r.neverWaits())
			var mb MultiAgentBatch
			require.NoError(t, r.Sample(&mb), "the runner works either way")
		})
	}
}
