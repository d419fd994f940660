package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/onnxrl/sampler/inference"
)

func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "", stdout)
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	bi, _ := debug.ReadBuildInfo()
	fmt.Fprintln(stdout, versionLine(bi))
	if err := inference.Init(); err != nil {
		fmt.Fprintf(stdout, "onnxruntime: not loaded (%v)\n", err)
		return nil
	}
	fmt.Fprintf(stdout, "onnxruntime %s (%s; pinned %s)\n", inference.Version(), inference.LibraryPath(), inference.PinnedVersion)
	return nil
}

// versionLine says which sampler this is: the module version (a tag with go install
// module@version, "(devel)" in a checkout), the VCS revision and time the binary was built
// from, and the Go version. A build without VCS information (-buildvcs=false, or outside a
// checkout) says so.
func versionLine(bi *debug.BuildInfo) string {
	if bi == nil {
		return "sample (no build information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	line := "sample " + v
	if rev := settings["vcs.revision"]; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		line += ", revision " + rev
		if t := settings["vcs.time"]; t != "" {
			line += " (" + t + ")"
		}
		if settings["vcs.modified"] == "true" {
			line += ", modified"
		}
	} else {
		line += ", revision unknown (built without VCS information)"
	}
	if bi.GoVersion != "" {
		line += ", " + bi.GoVersion
	}
	return line
}
