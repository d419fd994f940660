package envrunner_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/spaces"
)

// TestCheckPolicy: the bundled CartPole policy binds against CartPole's spaces and is
// refused against Pendulum's, with New's error.
func TestCheckPolicy(t *testing.T) {
	if err := inference.Init(); err != nil {
		t.Skipf("ONNX Runtime not available: %v", err)
	}
	p, err := models.Bundled("cartpole_mlp")
	require.NoError(t, err)
	require.NoError(t, envrunner.CheckPolicy("p", envrunner.PolicyConfig{Policy: p}))
	err = envrunner.CheckPolicy("p", envrunner.PolicyConfig{Policy: p,
		ObservationSpace: spaces.NewBox(-1, 1, 3), ActionSpace: spaces.NewBox(-2, 2, 1)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `policy "p"`)
}
