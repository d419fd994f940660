package runspec

import (
	"errors"
	"testing"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func baseSpec() Spec {
	return Spec{Env: "CartPole-v1", Model: "random", NumEnvs: 5, Workers: 2, Explore: true, NormalizeActions: true,
		FragmentLength: 10, BatchMode: envrunner.TruncateEpisodes, CountStepsBy: envrunner.EnvSteps, Seed: 3}
}

// TestBuildSplitsEnvs: five sub-environments over two workers are 3 + 2, and the runners
// sample batches of a fragment each.
func TestBuildSplitsEnvs(t *testing.T) {
	r, err := Build(baseSpec())
	require.NoError(t, err)
	defer r.Close()
	require.Len(t, r.Group.Runners(), 2)
	assert.Equal(t, "random", r.Model)
	assert.Equal(t, []string{envrunner.DefaultPolicyID}, r.Policies)
	assert.True(t, r.Info.Single)
	for w, want := range []int{3 * 10, 2 * 10} {
		var b envrunner.MultiAgentBatch
		require.NoError(t, r.Group.Runners()[w].Sample(&b))
		assert.Equal(t, want, b.Rows(), "worker %d", w)
	}
}

// TestBuildSpecErrors: what cannot be built is a *SpecError naming the flag.
func TestBuildSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Spec)
		want string
	}{
		{func(s *Spec) { s.NumEnvs = 0 }, "--num-envs"},
		{func(s *Spec) { s.Workers = 6 }, "--workers 6 is more"},
		{func(s *Spec) { s.FragmentLength = 0 }, "--fragment-length"},
		{func(s *Spec) { s.BatchMode = "x" }, "--batch-mode"},
		{func(s *Spec) { s.CountStepsBy = "x" }, "--count-steps-by"},
		{func(s *Spec) { s.GAE, s.Gamma = true, 2 }, "--gamma"},
		{func(s *Spec) { s.EnvConfig = "{" }, "--env-config"},
		{func(s *Spec) { s.Device = "tpu" }, "--device"},
		{func(s *Spec) { s.Model, s.Policies = "", []string{"a=random", "b=random"} }, "need --policy-map"},
		{func(s *Spec) { s.Policies = []string{"a=random"} }, "not both"},
		{func(s *Spec) { s.Model, s.Env = "", "MountainCar-v0" }, "no bundled policy"},
	} {
		s := baseSpec()
		tc.edit(&s)
		_, err := Build(s)
		var se *SpecError
		require.True(t, errors.As(err, &se), "%s: %v", tc.want, err)
		assert.Contains(t, se.Msg, tc.want)
	}
	s := baseSpec()
	s.Env = "NoSuchEnv-v0"
	_, err := Build(s)
	require.Error(t, err)
	assert.False(t, IsSpecError(err), "an unknown environment is not a usage error: %v", err)
}

func TestShare(t *testing.T) {
	assert.Equal(t, []int64{4, 3, 3}, []int64{share(10, 3, 0), share(10, 3, 1), share(10, 3, 2)})
	assert.Equal(t, int64(0), share(0, 3, 1))
}
