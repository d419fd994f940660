package main

import (
	"os"
	"regexp"
	"runtime/debug"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVersionSaidAlike: the header, CMake's project and the Python package name the version
// the library reports.
func TestVersionSaidAlike(t *testing.T) {
	for file, pattern := range map[string]string{
		"../include/onnxrl/sampler.h": `(?m)^#define ONNXRL_VERSION "([^"]+)"`,
		"../CMakeLists.txt":           `(?m)^project\(onnxrl_sampler VERSION (\S+)`,
		"../python/pyproject.toml":    `(?m)^version = "([^"]+)"`,
	} {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		m := regexp.MustCompile(pattern).FindSubmatch(data)
		require.NotNil(t, m, "%s: no version matching %s", file, pattern)
		assert.Equal(t, libraryVersion, string(m[1]), file)
	}
}

func TestVersionString(t *testing.T) {
	bi := func(kv ...string) *debug.BuildInfo {
		b := &debug.BuildInfo{}
		for i := 0; i < len(kv); i += 2 {
			b.Settings = append(b.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return b
	}
	assert.Equal(t, libraryVersion, versionString(nil, false))
	assert.Equal(t, libraryVersion, versionString(bi("-buildmode", "c-shared"), true))
	assert.Equal(t, libraryVersion+"+d340733", versionString(bi("vcs.revision", "d340733ffb", "vcs.modified", "false"), true))
	assert.Equal(t, libraryVersion+"+d340733.dirty", versionString(bi("vcs.revision", "d340733ffb", "vcs.modified", "true"), true))
	p := unsafe.Pointer(onnxrl_version())
	v := unsafe.String((*byte)(p), bytesUntilNUL(p))
	assert.Regexp(t, `^`+regexp.QuoteMeta(libraryVersion)+`(\+[0-9a-f]{7}(\.dirty)?)?$`, v)
	assert.Same(t, onnxrl_version(), onnxrl_version(), "one string for the life of the process")
}

func bytesUntilNUL(p unsafe.Pointer) int {
	n := 0
	for *(*byte)(unsafe.Add(p, n)) != 0 {
		n++
	}
	return n
}
