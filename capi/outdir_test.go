package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOutDirNotCreated: issue 35's repro. onnxrl_env_open with "out" in a missing directory
// created it (as root, /nonexistent/dir). It is now ONNXRL_ERR_IO with fopen's reason, and
// nothing is created.
func TestOutDirNotCreated(t *testing.T) {
	needRuntime(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for _, c := range []struct{ out, want string }{
		{filepath.Join(dir, "missing", "deeper", "x.jsonl"), "no such file or directory"},
		{filepath.Join(file, "x.jsonl"), "not a directory"},
	} {
		_, err := openEnv("cartpole_mlp", []byte(`{"out": "`+c.out+`"}`))
		assert.Equal(t, statusIO, statusOf(err), "%v", err)
		assert.ErrorContains(t, err, c.want)
		assert.ErrorContains(t, err, c.out)
	}
	_, err := os.Stat(filepath.Join(dir, "missing"))
	assert.True(t, os.IsNotExist(err), "the directory was created")

	e, err := openEnv("cartpole_mlp", []byte(`{"out": "`+filepath.Join(dir, "ok.jsonl")+`"}`))
	require.NoError(t, err)
	require.NoError(t, e.close())
}
