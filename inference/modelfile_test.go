package inference_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/inference"
)

// TestLoadFileUnbounded: issue 35's repros. /dev/zero was read until memory ran out, a sparse
// 50 GB file killed the process in 0.25 s, a named pipe would wait forever for a writer, and a
// 3 GB file took 54 s and 3.2 GB before its error. Each is now refused from one stat, before
// anything is read.
func TestLoadFileUnbounded(t *testing.T) {
	dir := t.TempDir()
	sparse := filepath.Join(dir, "sparse.onnx")
	f, err := os.Create(sparse)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(50<<30)) // 50 GiB of holes: no disk used
	require.NoError(t, f.Close())
	fifo := filepath.Join(dir, "pipe.onnx")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))

	cases := []struct {
		path string
		want string
		kind any
	}{
		{"/dev/zero", "inference: model /dev/zero: not a regular file (a character device)", new(*inference.NotRegularError)},
		{fifo, "not a regular file (a named pipe)", new(*inference.NotRegularError)},
		{dir, "not a regular file (a directory)", new(*inference.NotRegularError)},
		{sparse, "the file is 50 GiB, more than the limit of 1 GiB", new(*inference.FileSizeError)},
	}
	for _, c := range cases {
		start := time.Now()
		_, err := inference.LoadFile(c.path)
		require.Error(t, err, c.path)
		assert.Less(t, time.Since(start), 5*time.Second, "%s: refused before reading", c.path)
		assert.ErrorContains(t, err, c.want)
		assert.True(t, errors.As(err, c.kind), "%s: %T", c.path, err)
		var me *inference.ModelError
		assert.True(t, errors.As(err, &me))
	}

	_, err = inference.LoadFile(filepath.Join(dir, "missing.onnx"))
	assert.ErrorIs(t, err, fs.ErrNotExist)

	// A limit of its own: a file over it is refused with both sizes; at it, it is read.
	small := filepath.Join(dir, "small.onnx")
	require.NoError(t, os.WriteFile(small, []byte("not a model, 26 bytes long"), 0o644))
	_, err = inference.LoadFileLimit(small, 25)
	var se *inference.FileSizeError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, int64(26), se.Size)
	assert.Equal(t, int64(25), se.Limit)
	assert.EqualError(t, err, "inference: model "+small+": the file is 26 bytes, more than the limit of 25 bytes")
	_, err = inference.LoadFileLimit(small, 26)
	assert.ErrorIs(t, err, inference.ErrNotONNX) // read, then parsed
}

func TestReadFileLimit(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x")
	require.NoError(t, os.WriteFile(p, []byte("abc"), 0o644))
	got, err := inference.ReadFileLimit(p, 3)
	require.NoError(t, err)
	assert.Equal(t, "abc", string(got))
	_, err = inference.ReadFileLimit(p, 2)
	assert.EqualError(t, err, p+" is 3 bytes, more than the limit of 2 bytes")
	link := filepath.Join(dir, "zero")
	require.NoError(t, os.Symlink("/dev/zero", link))
	_, err = inference.ReadFileLimit(link, 1<<30)
	assert.EqualError(t, err, link+" is not a regular file (a character device)")
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 bytes", 1023: "1023 bytes", 1024: "1 KiB", 1536: "1.5 KiB (1536 bytes)", 1 << 30: "1 GiB",
		3 << 30: "3 GiB", 3_000_000_000: "2.8 GiB (3000000000 bytes)", 50 << 30: "50 GiB",
	} {
		assert.Equal(t, want, inference.FormatBytes(n), "%d", n)
	}
}
