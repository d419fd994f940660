package output

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Format is the file format of a Writer.
type Format int

const (
	// FormatAuto picks the format from the path's extension (see FormatOf).
	FormatAuto Format = iota
	// FormatJSON is JSON lines in RLlib's old offline layout (see AppendJSON).
	FormatJSON
	// FormatParquet is Parquet, one row per transition (see envrunner/arrowbatch).
	FormatParquet
)

// String returns the name that ParseFormat reads.
func (f Format) String() string {
	switch f {
	case FormatJSON:
		return "json"
	case FormatParquet:
		return "parquet"
	}
	return "auto"
}

// ParseFormat reads a format name: json (also jsonl), parquet, or auto (or "").
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "", "auto":
		return FormatAuto, nil
	case "json", "jsonl":
		return FormatJSON, nil
	case "parquet":
		return FormatParquet, nil
	}
	return FormatAuto, fmt.Errorf("output: unknown format %q (want json or parquet)", s)
}

// FormatOf returns the format a path's extension names: Parquet for .parquet and .pq, JSON
// lines for anything else (.json, .jsonl, /dev/stdout, ...).
func FormatOf(path string) Format {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".parquet", ".pq":
		return FormatParquet
	}
	return FormatJSON
}

// Resolve returns f, or the format of path when f is FormatAuto.
func (f Format) Resolve(path string) Format {
	if f == FormatAuto {
		return FormatOf(path)
	}
	return f
}

// Compression is the codec of a Parquet file's pages.
type Compression int

const (
	// Zstd (level 1): CartPole rows take 45 bytes (BenchmarkWriter), 15% less than Snappy.
	Zstd Compression = iota
	// Snappy: 53 bytes a CartPole row, and a little faster.
	Snappy
	// Uncompressed pages.
	Uncompressed
)

// ParseCompression reads zstd, snappy or none.
func ParseCompression(s string) (Compression, error) {
	switch strings.ToLower(s) {
	case "", "zstd":
		return Zstd, nil
	case "snappy":
		return Snappy, nil
	case "none", "uncompressed":
		return Uncompressed, nil
	}
	return Zstd, fmt.Errorf("output: unknown compression %q (want zstd, snappy or none)", s)
}
