package runspec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/output"
	"github.com/onnxrl/sampler/models"
)

// Output is where a command writes its sample batches (sample run, serve and drain's --out)
// and how: field by field their flags.
type Output struct {
	Path        string // --out
	Format      string // --format: parquet, json or auto ("": auto, by the extension)
	Compression string // --compression: snappy ("" too), zstd or none
	MaxFileSize int64  // --max-file-size: rotate at this size (0: never)
	// Overwrite (--overwrite) replaces an earlier run's output set; without it Open refuses
	// to write over one.
	Overwrite bool
	// FlushInterval (--flush-interval) closes the file at least this often (0: only when
	// full and at the end).
	FlushInterval time.Duration
}

// Check refuses a path that would not get what its name promises (what names it in the
// message: "--out"): an extension that names no format when Format is auto (the writer would
// write JSON lines into x.csv), and a directory that does not exist (the writer would create
// it; cp refuses, and so do we, so that a mistyped directory is not filled quietly). A file
// that exists and is not a regular file (/dev/stdout, a named pipe) has no extension to
// check: it gets Format, JSON lines by default. A bad Format is a *SpecError.
func (o *Output) Check(what string) error {
	f, err := output.ParseFormat(o.format())
	if err != nil {
		return specErrorf("--format: %v", err)
	}
	path := o.Path
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil
	}
	if ext := filepath.Ext(path); f == output.FormatAuto && !knownExtension(strings.ToLower(ext)) {
		why := "has no extension to choose the format by"
		if ext != "" {
			why = "extension " + ext + " names no output format"
		}
		return specErrorf("%s %s: %s; name it .parquet (or .pq) for Parquet or .jsonl (or .json) for JSON lines, or give --format parquet|json", what, path, why)
	}
	dir := filepath.Dir(path)
	switch fi, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s %s: directory %s does not exist", what, path, dir)
	case err != nil:
		return fmt.Errorf("%s %s: %w", what, path, err)
	case !fi.IsDir():
		return fmt.Errorf("%s %s: %s is not a directory", what, path, dir)
	}
	return nil
}

func (o *Output) format() string {
	if o.Format == "" {
		return "auto"
	}
	return o.Format
}

// knownExtension reports whether ext (lower case, with its dot) names an output format.
func knownExtension(ext string) bool {
	switch ext {
	case ".parquet", ".pq", ".jsonl", ".json":
		return true
	}
	return false
}

// Options returns the writer options: the format (unresolved: auto stays auto), the
// compression, the rotation size, the flush interval and the files' metadata. A bad Format
// or Compression is a *SpecError.
func (o *Output) Options(meta map[string]string) (output.Options, error) {
	f, err := output.ParseFormat(o.format())
	if err != nil {
		return output.Options{}, specErrorf("--format: %v", err)
	}
	comp := o.Compression
	if comp == "" {
		comp = "snappy"
	}
	c, err := output.ParseCompression(comp)
	if err != nil {
		return output.Options{}, specErrorf("--compression: %v", err)
	}
	return output.Options{MaxFileSize: o.MaxFileSize, Format: f, Compression: c, Metadata: meta, FlushInterval: o.FlushInterval}, nil
}

// Open starts writing Path: it refuses an earlier run's output set there, or removes it with
// Overwrite (Prepare), and opens the writer with meta as the files' metadata; onWritten (nil:
// none) gets each batch back once written.
func (o *Output) Open(meta map[string]string, onWritten func(*envrunner.MultiAgentBatch)) (*output.Writer, error) {
	opts, err := o.Options(meta)
	if err != nil {
		return nil, err
	}
	if err := o.Prepare(); err != nil {
		return nil, err
	}
	opts.OnWritten = onWritten
	return output.NewWriter(o.Path, opts)
}

// ResolvedFormat is the format Path is written in (auto resolved by the extension).
func (o *Output) ResolvedFormat() (output.Format, error) {
	f, err := output.ParseFormat(o.format())
	if err != nil {
		return 0, specErrorf("--format: %v", err)
	}
	return f.Resolve(o.Path), nil
}

// Prepare refuses to write over an earlier output set at Path unless Overwrite is set, in
// which case it removes the whole set (OutputSet): a reader of x*.jsonl must not mix two
// runs.
func (o *Output) Prepare() error {
	set, err := OutputSet(o.Path)
	if err != nil {
		return err
	}
	if len(set) == 0 {
		return nil
	}
	if !o.Overwrite {
		more := ""
		if len(set) > 1 {
			more = fmt.Sprintf(" and %d rotated files", len(set)-1)
		}
		return fmt.Errorf("--out %s: %s%s exist from an earlier run; give --overwrite to replace them all, or another --out", o.Path, set[0], more)
	}
	for _, f := range set {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// OutputSet returns the files of an earlier run that a run writing to path would mix with:
// path itself and its rotated files (output.RotatedName: x-000001.jsonl, ...), and for a
// Parquet path (by its extension) the policies' file sets too (output.PolicyPath:
// x-<policy>.parquet, x-<policy>-000001.parquet, ...), each also under its incomplete name
// (x-000003.jsonl.partial, see output.PartialSuffix). Only regular files count: --out
// /dev/stdout or a named pipe is not an earlier run's data.
func OutputSet(path string) ([]string, error) {
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
			if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() && inSet(strings.TrimSuffix(strings.TrimPrefix(m, stem+"-"), ext+suffix), parquet) {
				set = append(set, m)
			}
		}
	}
	return set, nil
}

// inSet reports whether mid, what a file's name has between the stem's "-" and the
// extension, is one of ours: a rotation number, or for Parquet a policy id (and number).
func inSet(mid string, parquet bool) bool {
	if parquet {
		return strings.Trim(mid, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-") == ""
	}
	return len(mid) >= 6 && strings.Trim(mid, "0123456789") == ""
}

func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}

// Metadata is the files' metadata of samples from src made by policy p (nil: random, or
// several): src with p's spec and model bytes.
func Metadata(src output.Source, p *models.Policy) map[string]string {
	if p != nil {
		src.PolicySpec = &p.Spec
		if p.Model != nil {
			src.ModelBytes = p.Model.Bytes()
		}
	}
	return src.Metadata()
}

// Metadata is the files' metadata of the run's samples: its environment and config, seed,
// exploration, spaces and model (Metadata).
func (r *Run) Metadata() map[string]string {
	return Metadata(output.Source{Env: r.Spec.Env, EnvConfig: r.Spec.EnvConfig, Seed: r.Spec.Seed, Explore: r.Spec.Explore,
		ObsSpace: r.Info.Obs, ActSpace: r.Info.Act, Model: r.Model}, r.Policy)
}
