package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/onnxrl/sampler/inference"
)

func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "", stderr)
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	fmt.Fprintf(stdout, "sample %s\n", v)
	if err := inference.Init(); err != nil {
		fmt.Fprintf(stdout, "onnxruntime: not loaded (%v)\n", err)
		return nil
	}
	fmt.Fprintf(stdout, "onnxruntime %s (%s; pinned %s)\n", inference.Version(), inference.LibraryPath(), inference.PinnedVersion)
	return nil
}
