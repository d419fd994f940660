package main

import (
	"flag"

	"github.com/onnxrl/sampler/envrunner/runspec"
)

// registerOutputFlags registers the flags that choose how sample files are written (run,
// serve, drain, convert) into o.
func registerOutputFlags(fs *flag.FlagSet, o *runspec.Output) {
	fs.StringVar(&o.Format, "format", "auto", "output format: parquet, json (JSON lines), or auto (from the extension: .parquet or .pq is Parquet, .jsonl or .json JSON lines; others are refused)")
	fs.StringVar(&o.Compression, "compression", "snappy", "Parquet compression: snappy, zstd or none")
}
