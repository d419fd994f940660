package main

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestVersionLine(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/onnxrl/sampler", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "85820a7d2b9f0c1e2a3b4c5d6e7f8091a2b3c4d5"},
			{Key: "vcs.time", Value: "2026-11-23T19:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	assert.Equal(t, "sample v0.3.0, revision 85820a7d2b9f (2026-11-23T19:00:00Z), modified, go1.26.8", versionLine(bi))
	bi = &debug.BuildInfo{GoVersion: "go1.26.8"}
	assert.Equal(t, "sample (devel), revision unknown (built without VCS information), go1.26.8", versionLine(bi))
	assert.Equal(t, "sample (no build information)", versionLine(nil))

	code, out, errs := runCLI("version")
	assert.Equal(t, 0, code, errs)
	assert.True(t, strings.HasPrefix(out, "sample "), out)
	assert.Contains(t, out, "onnxruntime")
}
