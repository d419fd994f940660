package runspec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env/classic"
	"github.com/onnxrl/sampler/inference"
)

// TestBindPolicyRandom: a random policy takes the spaces it is given and needs both.
func TestBindPolicyRandom(t *testing.T) {
	cp, err := classic.NewCartPole(nil)
	require.NoError(t, err)
	pc, err := BindPolicy(PolicySpec{Model: "random", ObservationSpace: cp.ObservationSpace(), ActionSpace: cp.ActionSpace()})
	require.NoError(t, err)
	assert.True(t, pc.Random)
	assert.Nil(t, pc.Policy)
	_, err = BindPolicy(PolicySpec{Model: "random", ObservationSpace: cp.ObservationSpace()})
	require.True(t, IsSpecError(err), "%v", err)
	assert.Contains(t, err.Error(), "--obs-space and --action-space")
}

// TestBindPolicyModel: a model's spaces are its spec's unless given, the session runs on
// the device given (cpu by default); a model over the size limit names the flag.
func TestBindPolicyModel(t *testing.T) {
	if err := inference.Init(); err != nil {
		t.Skipf("ONNX Runtime not available: %v", err)
	}
	pc, err := BindPolicy(PolicySpec{Model: "cartpole_mlp", Threads: 2})
	require.NoError(t, err)
	require.NotNil(t, pc.Policy)
	assert.Equal(t, pc.Policy.Spec.ObservationSpace, pc.ObservationSpace)
	assert.Equal(t, pc.Policy.Spec.ActionSpace, pc.ActionSpace)
	assert.Equal(t, inference.Options{Device: "cpu", IntraOpThreads: 2, InterOpThreads: 1}, pc.Session)
	path := filepath.Join(t.TempDir(), "m.onnx")
	require.NoError(t, os.WriteFile(path, pc.Policy.Model.Bytes(), 0o644))
	_, err = OpenPolicy(path, 16)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--max-model-size")
	_, err = OpenPolicy("", 0)
	assert.True(t, IsSpecError(err), "%v", err)
}
