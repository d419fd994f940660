package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/onnxrl/sampler/envrunner/output"
)

// TestOutputSet: an earlier run's files are found — rotations, and for Parquet the policies'
// file sets — while other files beside them are not.
func TestOutputSet(t *testing.T) {
	dir := t.TempDir()
	touch := func(names ...string) {
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	touch("x.parquet", "x-000001.parquet", "x-lstm.parquet", "x-lstm-000001.parquet", "x-a b.parquet", "y-lstm.parquet",
		"x.jsonl", "x-000001.jsonl", "x-lstm.jsonl")
	for _, tt := range []struct {
		path string
		want []string
	}{
		{"x.parquet", []string{"x.parquet", "x-000001.parquet", "x-lstm-000001.parquet", "x-lstm.parquet"}},
		{"x.jsonl", []string{"x.jsonl", "x-000001.jsonl"}},
	} {
		got, err := outputSet(filepath.Join(dir, tt.path))
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			got[i] = filepath.Base(got[i])
		}
		slices.Sort(got)
		want := slices.Clone(tt.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("outputSet(%s) = %v, want %v", tt.path, got, want)
		}
	}
	if p := output.PolicyPath(filepath.Join(dir, "x.parquet"), "lstm"); filepath.Base(p) != "x-lstm.parquet" {
		t.Errorf("PolicyPath gives %s, which outputSet would not find", p)
	}
}
