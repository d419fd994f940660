package main

// #include <stdlib.h>
import "C"

import (
	"runtime/debug"
	"sync"
)

// libraryVersion is the library's release: the header's ONNXRL_VERSION, CMakeLists.txt's
// project VERSION and python/pyproject.toml's version (TestVersionSaidAlike compares them).
const libraryVersion = "0.1.0"

// versionString is libraryVersion with the build's commit as semver build metadata:
// "0.1.0+d340733" ("+d340733.dirty" when the tree had uncommitted changes), or
// "0.1.0" alone when the build recorded no commit (go test, -buildvcs=false).
func versionString(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		return libraryVersion
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return libraryVersion
	}
	v := libraryVersion + "+" + rev[:min(len(rev), 7)]
	if dirty {
		v += ".dirty"
	}
	return v
}

// cVersion is versionString as a C string made once and never freed (the header promises a
// string valid for the life of the process).
var cVersion = sync.OnceValue(func() *C.char {
	return C.CString(versionString(debug.ReadBuildInfo()))
})

//export onnxrl_version
func onnxrl_version() *C.char { return cVersion() }
