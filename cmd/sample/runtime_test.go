package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePackage builds an npm-style tarball holding files (name -> content).
func fakePackage(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func TestInstallRuntime(t *testing.T) {
	lib := "not really a shared library"
	pkg := fakePackage(t, map[string]string{
		"package/README.md": "readme",
		"package/bin/napi-v6/linux/x64/libonnxruntime.so.1":   lib,
		"package/bin/napi-v6/linux/arm64/libonnxruntime.so.1": "arm",
	})
	pins := runtimePins{version: "9.9.9", tarballSHA256: sum(pkg), libSHA256: map[string]string{"x64": sum([]byte(lib)), "arm64": sum([]byte("arm"))}}

	dest := filepath.Join(t.TempDir(), "cache", "lib")
	path, err := installRuntime(bytes.NewReader(pkg), pins, "x64", dest)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dest, "libonnxruntime.so.1"), path)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, lib, string(got))
	target, err := os.Readlink(filepath.Join(dest, "libonnxruntime.so"))
	require.NoError(t, err)
	assert.Equal(t, "libonnxruntime.so.1", target)
	// Installing again replaces it.
	_, err = installRuntime(bytes.NewReader(pkg), pins, "x64", dest)
	require.NoError(t, err)

	for name, tc := range map[string]struct {
		pkg  []byte
		pins runtimePins
		arch string
		want string
	}{
		"tarball digest": {pkg, runtimePins{version: "9.9.9", tarballSHA256: sum([]byte("x")), libSHA256: pins.libSHA256}, "x64", "tarball: sha256"},
		"library digest": {pkg, runtimePins{version: "9.9.9", tarballSHA256: pins.tarballSHA256, libSHA256: map[string]string{"x64": sum([]byte("x"))}}, "x64", "libonnxruntime.so.1: sha256"},
		"no member":      {fakePackage(t, map[string]string{"package/x": "y"}), runtimePins{version: "9.9.9", tarballSHA256: "", libSHA256: pins.libSHA256}, "x64", "sha256"},
		"not gzip":       {[]byte("plain text"), pins, "x64", "onnxruntime-node package"},
		"unknown arch":   {pkg, pins, "riscv64", "no pinned ONNX Runtime build for linux/riscv64"},
	} {
		dest := filepath.Join(t.TempDir(), "lib")
		_, err := installRuntime(bytes.NewReader(tc.pkg), tc.pins, tc.arch, dest)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tc.want, name)
		assert.NoFileExists(t, filepath.Join(dest, "libonnxruntime.so.1"), name)
	}
	// The member missing from a package whose digest is right.
	nomember := fakePackage(t, map[string]string{"package/x": "y"})
	_, err = installRuntime(bytes.NewReader(nomember), runtimePins{version: "9.9.9", tarballSHA256: sum(nomember), libSHA256: pins.libSHA256}, "x64", t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "has no package/bin/napi-v6/linux/x64/libonnxruntime.so.1")
}

// TestRuntimeCommand: the pinned package's digest is checked on --from files, and the
// subcommands are named in errors.
func TestRuntimeCommand(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "pkg.tgz")
	require.NoError(t, os.WriteFile(fake, fakePackage(t, map[string]string{"package/x": "y"}), 0o644))
	code, _, errs := runCLI("runtime", "install", "--from", fake, "--dir", filepath.Join(dir, "lib"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "want "+pinnedRuntime.tarballSHA256)

	code, _, errs = runCLI("runtime", "instal")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "did you mean install?")
	code, _, _ = runCLI("runtime")
	assert.Equal(t, 2, code)

	t.Setenv("XDG_CACHE_HOME", dir)
	code, out, errs := runCLI("runtime", "path")
	require.Equal(t, 0, code, errs)
	assert.Equal(t, filepath.Join(dir, "onnxrl-sampler", "onnxruntime-"+pinnedRuntime.version, "lib", "libonnxruntime.so.1")+"\n", out)
}

// TestRuntimeInstallKeepsPresent: a folder that already holds the pinned library (the project's
// own install, linked in) is kept without downloading; --force installs again (here from a
// bad tarball, so it fails on its digest), and a library with another digest is replaced.
func TestRuntimeInstallKeepsPresent(t *testing.T) {
	arch, err := npmArch()
	if err != nil {
		t.Skip(err)
	}
	pinned := filepath.Join("..", "..", "third_party", "onnxruntime", "lib", "libonnxruntime.so.1")
	if _, ok := installedRuntime(pinnedRuntime, arch, filepath.Dir(pinned)); !ok {
		t.Skip("the pinned library is not installed in third_party (make onnxruntime)")
	}
	dir := t.TempDir()
	abs, err := filepath.Abs(pinned)
	require.NoError(t, err)
	require.NoError(t, os.Symlink(abs, filepath.Join(dir, "libonnxruntime.so.1")))
	code, out, errs := runCLI("runtime", "install", "--dir", dir)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, errs, "already installed, sha256 checked")
	assert.Equal(t, filepath.Join(dir, "libonnxruntime.so.1")+"\n", out)

	fake := filepath.Join(t.TempDir(), "pkg.tgz")
	require.NoError(t, os.WriteFile(fake, fakePackage(t, map[string]string{"package/x": "y"}), 0o644))
	code, _, errs = runCLI("runtime", "install", "--force", "--from", fake, "--dir", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "want "+pinnedRuntime.tarballSHA256)

	other := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(other, "libonnxruntime.so.1"), []byte("not the library"), 0o644))
	code, _, errs = runCLI("runtime", "install", "--from", fake, "--dir", other)
	assert.Equal(t, 1, code)
	assert.NotContains(t, errs, "already installed")
}
