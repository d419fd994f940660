package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/onnxrl/sampler/envrunner/output"
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/spaces"
)

// outputFlags are the flags that choose how sample files are written (run, serve, convert).
type outputFlags struct {
	format, compression string
}

func (o *outputFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.format, "format", "auto", "output format: parquet, json (JSON lines), or auto (from the extension: .parquet or .pq is Parquet, .jsonl or .json JSON lines; others are refused)")
	fs.StringVar(&o.compression, "compression", "snappy", "Parquet compression: snappy, zstd or none")
}

// options returns the writer options for path.
func (o *outputFlags) options(maxSize int64, meta map[string]string) (output.Options, error) {
	f, err := output.ParseFormat(o.format)
	if err != nil {
		return output.Options{}, usagef("--format: %v", err)
	}
	c, err := output.ParseCompression(o.compression)
	if err != nil {
		return output.Options{}, usagef("--compression: %v", err)
	}
	return output.Options{MaxFileSize: maxSize, Format: f, Compression: c, Metadata: meta}, nil
}

// checkOut refuses an output path (named by what: "--out" or "output") that would not get
// what its name promises: an extension that names no format when --format is auto (the writer
// would write JSON lines into x.csv), and a directory that does not exist (the writer would
// create it; cp refuses, and so do we, so that a mistyped directory is not filled quietly).
// A file that exists and is not a regular file (/dev/stdout, a named pipe) has no extension
// to check: it gets --format, JSON lines by default.
func (o *outputFlags) checkOut(what, path string) error {
	f, err := output.ParseFormat(o.format)
	if err != nil {
		return usagef("--format: %v", err)
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil
	}
	if ext := filepath.Ext(path); f == output.FormatAuto && !knownExtension(strings.ToLower(ext)) {
		why := "has no extension to choose the format by"
		if ext != "" {
			why = "extension " + ext + " names no output format"
		}
		return usagef("%s %s: %s; name it .parquet (or .pq) for Parquet or .jsonl (or .json) for JSON lines, or give --format parquet|json", what, path, why)
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

// knownExtension reports whether ext (lower case, with its dot) names an output format.
func knownExtension(ext string) bool {
	switch ext {
	case ".parquet", ".pq", ".jsonl", ".json":
		return true
	}
	return false
}

// sampleMetadata is the Parquet metadata of samples of this policy (nil for random).
func sampleMetadata(envName, envConfig string, seed uint64, explore bool, obs, act spaces.Space, model string, p *models.Policy) map[string]string {
	src := output.Source{Env: envName, EnvConfig: envConfig, Seed: seed, Explore: explore,
		ObsSpace: obs, ActSpace: act, Model: model}
	if p != nil {
		src.PolicySpec = &p.Spec
		if p.Model != nil {
			src.ModelBytes = p.Model.Bytes()
		}
	}
	return src.Metadata()
}
