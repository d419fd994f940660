package models_test

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

// TestOpenLimit: a model over the limit, a device as the model or as its sidecar spec are
// refused from a stat, before anything is read (issue 35: /dev/zero was read until memory
// ran out).
func TestOpenLimit(t *testing.T) {
	dir := t.TempDir()
	model, err := models.WriteBundled(dir, "cartpole_mlp")
	require.NoError(t, err)
	fi, err := os.Stat(model)
	require.NoError(t, err)

	_, err = models.OpenLimit(model, fi.Size()-1)
	var se *inference.FileSizeError
	assert.True(t, errors.As(err, &se), "%v", err)
	p, err := models.OpenLimit(model, fi.Size())
	require.NoError(t, err)
	assert.Equal(t, 4, p.Spec.ObservationSpace.Size())

	_, err = models.Open("/dev/zero")
	var ne *inference.NotRegularError
	assert.True(t, errors.As(err, &ne), "%v", err)

	sidecar := models.SidecarPath(model)
	_ = os.Remove(sidecar)
	require.NoError(t, os.Symlink("/dev/zero", sidecar))
	start := time.Now()
	_, err = models.Open(model)
	assert.ErrorContains(t, err, "not a regular file (a character device)")
	assert.Less(t, time.Since(start), 5*time.Second)

	// Bundled names are not files: no limit applies to them.
	_, err = models.OpenLimit("cartpole_mlp", 1)
	require.NoError(t, err)
}
