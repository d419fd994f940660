package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/onnxrl/sampler/envrunner/output"
)

// outputSet returns the files of an earlier run that a run writing to path would mix with:
// path itself and its rotated files (output.RotatedName: x-000001.jsonl, ...), and for a
// Parquet path (by its extension) the policies' file sets too (output.PolicyPath:
// x-<policy>.parquet, x-<policy>-000001.parquet, ...), each also under its incomplete name
// (x-000003.jsonl.partial, see output.PartialSuffix). Only regular files count: --out
// /dev/stdout or a named pipe is not an earlier run's data.
func outputSet(path string) ([]string, error) {
	var set []string
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return nil, nil
		}
		set = append(set, path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if fi, err := os.Stat(path + output.PartialSuffix); err == nil && fi.Mode().IsRegular() {
		set = append(set, path+output.PartialSuffix)
	}
	ext := filepath.Ext(path)
	stem := path[:len(path)-len(ext)]
	parquet := output.FormatOf(path) == output.FormatParquet
	pattern := "-[0-9][0-9][0-9][0-9][0-9][0-9]*"
	if parquet {
		pattern = "-?*"
	}
	for _, suffix := range []string{"", output.PartialSuffix} {
		matches, err := filepath.Glob(globEscape(stem) + pattern + globEscape(ext+suffix))
		if err != nil {
			return nil, err
		}
		for _, m := range matches {
			mid := strings.TrimSuffix(strings.TrimPrefix(m, stem+"-"), ext+suffix)
			ours := len(mid) >= 6 && strings.Trim(mid, "0123456789") == ""
			if parquet {
				ours = strings.Trim(mid, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-") == ""
			}
			if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() && ours {
				set = append(set, m)
			}
		}
	}
	return set, nil
}

func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}

// prepareOutput refuses to write over an earlier output set unless overwrite is set, in
// which case it removes the whole set: a reader of x*.jsonl must not mix two runs.
func prepareOutput(path string, overwrite bool) error {
	set, err := outputSet(path)
	if err != nil {
		return err
	}
	if len(set) == 0 {
		return nil
	}
	if !overwrite {
		more := ""
		if len(set) > 1 {
			more = fmt.Sprintf(" and %d rotated files", len(set)-1)
		}
		return fmt.Errorf("--out %s: %s%s exist from an earlier run; give --overwrite to replace them all, or another --out", path, set[0], more)
	}
	for _, f := range set {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}
