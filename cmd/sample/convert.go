package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/output"
)

const convertArgs = "IN... OUT [--from auto|json|parquet] [--format auto|json|parquet] [--compression snappy|zstd|none] [--max-file-size SIZE]"

// runConvert copies sample files from one format to the other: JSON lines (RLlib's old
// JsonReader) to Parquet (its offline data API) and back, batch by batch. Several inputs (the
// rotated files of one run) go into one output; the metadata of Parquet inputs is kept.
func runConvert(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("convert", convertArgs, stdout)
	var of outputFlags
	of.register(fs)
	from := fs.String("from", "auto", "input format: parquet, json, or auto (from each input's extension)")
	maxFileSize := fs.String("max-file-size", "0", "rotate the output file at this size (bytes, or with KiB/MiB/GiB; 0: never)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usagef("want at least one input and an output: sample convert %s", convertArgs)
	}
	ins, out := pos[:len(pos)-1], pos[len(pos)-1]
	if err := of.checkOut("output", out); err != nil {
		return err
	}
	inFormat, err := output.ParseFormat(*from)
	if err != nil {
		return usagef("--from: %v", err)
	}
	maxSize, err := parseSize(*maxFileSize)
	if err != nil {
		return usagef("--max-file-size: %v", err)
	}
	for _, in := range ins {
		if in == out {
			return usagef("output %s is also an input", out)
		}
	}
	meta := map[string]string{}
	for _, in := range ins {
		if inFormat.Resolve(in) != output.FormatParquet {
			continue
		}
		m, err := output.ParquetMetadata(in)
		if err != nil {
			return err
		}
		for k, v := range m {
			meta[k] = v
		}
	}
	meta["onnxrl.converted_from"] = strings.Join(ins, ",")
	opts, err := of.options(maxSize, meta)
	if err != nil {
		return err
	}
	w, err := output.NewWriter(out, opts)
	if err != nil {
		return err
	}
	var batches, rows int64
	for _, in := range ins {
		err := output.ReadFile(in, inFormat, func(m *envrunner.MultiAgentBatch) error {
			if m.Rows() == 0 {
				return nil
			}
			batches++
			rows += int64(m.Rows())
			return w.Write(m)
		})
		if err != nil {
			w.Close()
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	st := w.Stats()
	fmt.Fprintf(stdout, "%s: %d batches, %d rows, %d bytes in %d file(s)\n", strings.Join(w.Files(), ", "), batches, rows, st.Bytes, st.Files)
	return nil
}
