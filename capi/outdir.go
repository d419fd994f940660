package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// checkOutDir refuses an "out" path whose directory does not exist (or is not a directory),
// as fopen(out, "w") would: making directories is not the C API's job (issue 35: as root,
// "out": "/nonexistent/dir/x.jsonl" created /nonexistent/dir).
func checkOutDir(out string) error {
	dir := filepath.Dir(out)
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		if pe, ok := err.(*fs.PathError); ok {
			err = pe.Err
		}
	case !fi.IsDir():
		err = syscall.ENOTDIR
	default:
		return nil
	}
	return withStatus(statusIO, fmt.Errorf("onnxrl: \"out\" %s: open %s: %w (its directory %s must exist)", out, out, err, dir))
}
