package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenUnboundedModel: issue 35's repro. onnxrl_policy_open("/dev/zero") never returned
// (it read until memory ran out). A model must be a regular file of at most
// "max_model_bytes" (default 1 GiB), checked before it is read.
func TestOpenUnboundedModel(t *testing.T) {
	needRuntime(t)
	sparse := filepath.Join(t.TempDir(), "sparse.onnx")
	f, err := os.Create(sparse)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(50<<30))
	require.NoError(t, f.Close())
	small, err := filepath.Abs("../models/cartpole_mlp.onnx")
	require.NoError(t, err)

	for _, c := range []struct {
		model, options string
		status         int
		msg            string
	}{
		{"/dev/zero", "", statusModel, "inference: model /dev/zero: not a regular file (a character device)"},
		{sparse, "", statusLimit, "the file is 50 GiB, more than the limit of 1 GiB (raise the limit with the option \"max_model_bytes\")"},
		{small, `{"max_model_bytes": 100}`, statusLimit, "more than the limit of 100 bytes"},
		{small, `{"max_model_bytes": 0}`, statusInvalidArgument, `"max_model_bytes" 0: want a positive size`},
	} {
		start := time.Now()
		_, err := openPolicy(c.model, []byte(c.options))
		assert.Equal(t, c.status, statusOf(err), "%s %s: %v", c.model, c.options, err)
		assert.ErrorContains(t, err, c.msg)
		_, err = openEnv(c.model, []byte(c.options))
		assert.Equal(t, c.status, statusOf(err), "env %s %s: %v", c.model, c.options, err)
		assert.Less(t, time.Since(start), 10*time.Second)
	}
	fi, err := os.Stat(small)
	require.NoError(t, err)
	p, err := openPolicy(small, []byte(fmt.Sprintf(`{"max_model_bytes": %d}`, fi.Size())))
	require.NoError(t, err)
	require.NoError(t, p.close())
}
