package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestModelSizeLimit: issue 35's repros. `sample inspect /dev/zero` read until memory ran out
// and a sparse 50 GB .onnx killed the process (fatal out of memory). Every command that loads
// a model refuses both from one stat, naming the file, and a larger model needs
// --max-model-size.
func TestModelSizeLimit(t *testing.T) {
	dir := t.TempDir()
	sparse := filepath.Join(dir, "sparse.onnx")
	f, err := os.Create(sparse)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(50<<30))
	require.NoError(t, f.Close())
	small, err := filepath.Abs("../../models/cartpole_mlp.onnx")
	require.NoError(t, err)
	fi, err := os.Stat(small)
	require.NoError(t, err)

	type tc struct {
		args []string
		want string
	}
	check := func(cases []tc) {
		for _, c := range cases {
			start := time.Now()
			code, _, errs := runCLI(c.args...)
			assert.NotEqual(t, 0, code, "%v", c.args)
			assert.Contains(t, errs, c.want, "%v", c.args)
			assert.Less(t, time.Since(start), 10*time.Second, "%v", c.args)
		}
	}
	check([]tc{
		{[]string{"inspect", "/dev/zero"}, "/dev/zero: not a regular file (a character device)"},
		{[]string{"inspect", sparse}, "the file is 50 GiB, more than the limit of 1 GiB (raise the limit with --max-model-size)"},
		{[]string{"infer", "--model", sparse, "--input", "-"}, "more than the limit of 1 GiB"},
		{[]string{"inspect", "--max-model-size", "1KiB", small}, "more than the limit of 1 KiB (raise the limit with --max-model-size)"},
		{[]string{"inspect", "--max-model-size", "0", small}, `--max-model-size "0": want a positive size`},
	})
	needRuntime(t) // run and serve start the runtime before they load the model
	check([]tc{
		{[]string{"run", "--model", "/dev/zero", "--steps", "10"}, "/dev/zero: not a regular file"},
		{[]string{"run", "--policy", "a=" + sparse, "--steps", "10"}, "more than the limit of 1 GiB (raise the limit with --max-model-size)"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--model", sparse}, "more than the limit of 1 GiB"},
	})
	code, out, errs := runCLI("inspect", "--max-model-size", strconv.FormatInt(fi.Size(), 10), small)
	assert.Equal(t, 0, code, errs)
	assert.Contains(t, out, "obs")
}
