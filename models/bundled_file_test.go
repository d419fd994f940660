package models_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/models"
)

func TestWriteBundled(t *testing.T) {
	dir := t.TempDir()
	path, err := models.WriteBundled(dir, "cartpole_mlp")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "cartpole_mlp.onnx"), path)
	want, err := os.ReadFile("cartpole_mlp.onnx")
	require.NoError(t, err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.FileExists(t, filepath.Join(dir, "cartpole_mlp.policy.json"))

	_, err = models.WriteBundled(dir, "no_such_model")
	assert.True(t, errors.Is(err, models.ErrUnknownBundled), "%v", err)
}
