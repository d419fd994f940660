package runspec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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
		got, err := OutputSet(filepath.Join(dir, tt.path))
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
			t.Errorf("OutputSet(%s) = %v, want %v", tt.path, got, want)
		}
	}
	if p := output.PolicyPath(filepath.Join(dir, "x.parquet"), "lstm"); filepath.Base(p) != "x-lstm.parquet" {
		t.Errorf("PolicyPath gives %s, which OutputSet would not find", p)
	}
}

// TestOutputOpen: Check refuses a path whose extension names no format and a missing
// directory; Open refuses an earlier run's set without Overwrite and replaces it with it.
func TestOutputOpen(t *testing.T) {
	dir := t.TempDir()
	o := Output{Path: filepath.Join(dir, "x.csv")}
	err := o.Check("--out")
	if !IsSpecError(err) {
		t.Fatalf("x.csv: %v, want a spec error", err)
	}
	o = Output{Path: filepath.Join(dir, "no", "x.jsonl")}
	if err := o.Check("--out"); err == nil || IsSpecError(err) {
		t.Fatalf("missing directory: %v", err)
	}
	o = Output{Path: filepath.Join(dir, "x.jsonl"), Compression: "lz5"}
	if _, err := o.Options(nil); !IsSpecError(err) {
		t.Fatalf("compression lz5: %v", err)
	}
	o.Compression = ""
	if err := os.WriteFile(o.Path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Open(nil, nil); err == nil || !strings.Contains(err.Error(), "--overwrite") {
		t.Fatalf("open over an earlier run: %v", err)
	}
	o.Overwrite = true
	w, err := o.Open(map[string]string{"k": "v"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(o.Path); err != nil || fi.Size() != 0 {
		t.Fatalf("the earlier file was not replaced: %v %v", fi, err)
	}
}
