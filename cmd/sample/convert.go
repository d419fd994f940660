package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/output"
	"github.com/onnxrl/sampler/envrunner/runspec"
)

const convertArgs = "IN... OUT [--from auto|json|parquet] [--format auto|json|parquet] [--compression snappy|zstd|none] [--max-file-size SIZE] [--overwrite]"

// runConvert copies sample files from one format to the other: JSON lines (RLlib's old
// JsonReader) to Parquet (its offline data API) and back, batch by batch. Several inputs (the
// rotated files of one run) go into one output; the metadata of Parquet inputs is kept.
// Incomplete files (x-000003.parquet.partial, left by a writer that was killed or hit a full
// disk) are skipped, with a line on stderr for each. An output that exists is refused
// unless --overwrite, as for run; a conversion that fails leaves no output.
func runConvert(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("convert", convertArgs, stdout)
	var of runspec.Output
	registerOutputFlags(fs, &of)
	from := fs.String("from", "auto", "input format: parquet, json, or auto (from each input's extension)")
	maxFileSize := fs.String("max-file-size", "0", "rotate the output file at this size (bytes, or with KiB/MiB/GiB; 0: never)")
	fs.BoolVar(&of.Overwrite, "overwrite", false, "replace an existing output file and its rotated files (otherwise refused)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usagef("want at least one input and an output: sample convert %s", convertArgs)
	}
	ins, out := pos[:len(pos)-1], pos[len(pos)-1]
	of.Path = out
	if err := of.Check("output"); err != nil {
		return err
	}
	inFormat, err := output.ParseFormat(*from)
	if err != nil {
		return usagef("--from: %v", err)
	}
	if of.MaxFileSize, err = parseSize(*maxFileSize); err != nil {
		return usagef("--max-file-size: %v", err)
	}
	if err := checkConvertInputs(ins, out); err != nil {
		return err
	}
	ins = skipPartial(ins, stderr)
	if len(ins) == 0 {
		return errors.New("no complete input to convert")
	}
	meta, err := convertMetadata(ins, inFormat)
	if err != nil {
		return err
	}
	w, err := of.Open(meta, nil)
	if err != nil {
		return err
	}
	batches, rows, err := convertFiles(w, ins, inFormat)
	if err == nil {
		err = w.Close()
	} else {
		w.Close()
	}
	if err != nil {
		removeOutput(w)
		return err
	}
	st := w.Stats()
	fmt.Fprintf(stdout, "%s: %d batches, %d rows, %d bytes in %d file(s)\n", strings.Join(w.Files(), ", "), batches, rows, st.Bytes, st.Files)
	return nil
}

// checkConvertInputs refuses inputs that are the output or one of its files (which
// --overwrite would replace).
func checkConvertInputs(ins []string, out string) error {
	set, err := runspec.OutputSet(out)
	if err != nil {
		return err
	}
	for _, in := range ins {
		if in == out {
			return usagef("output %s is also an input", out)
		}
		for _, f := range set {
			if filepath.Clean(in) == filepath.Clean(f) {
				return usagef("input %s is one of the output %s's files, which --overwrite would replace; choose another output", in, out)
			}
		}
	}
	return nil
}

// convertMetadata is the output's metadata: the Parquet inputs' (the later input's value
// of a key wins) and the inputs' names.
func convertMetadata(ins []string, inFormat output.Format) (map[string]string, error) {
	meta := map[string]string{}
	for _, in := range ins {
		if inFormat.Resolve(in) != output.FormatParquet {
			continue
		}
		m, err := output.ParquetMetadata(in)
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			meta[k] = v
		}
	}
	meta["onnxrl.converted_from"] = strings.Join(ins, ",")
	return meta, nil
}

// convertFiles writes the batches of the inputs with rows to w, counting them.
func convertFiles(w *output.Writer, ins []string, inFormat output.Format) (batches, rows int64, err error) {
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
			return batches, rows, err
		}
	}
	return batches, rows, nil
}

// skipPartial returns ins without the incomplete files (output.IsPartial), saying on stderr
// which it skips, and names the incomplete files of the inputs' file sets that were not given.
func skipPartial(ins []string, stderr io.Writer) []string {
	kept := ins[:0:0]
	given := map[string]bool{}
	for _, in := range ins {
		given[filepath.Clean(in)] = true
		if output.IsPartial(in) {
			fmt.Fprintf(stderr, "sample convert: skipping %s: an incomplete file (its writer was killed or failed before closing it)\n", in)
			continue
		}
		kept = append(kept, in)
	}
	seen := map[string]bool{}
	for _, in := range kept {
		base := setBase(in)
		if seen[base] {
			continue
		}
		seen[base] = true
		set, err := runspec.OutputSet(base)
		if err != nil {
			continue
		}
		for _, f := range set {
			if output.IsPartial(f) && !given[filepath.Clean(f)] {
				fmt.Fprintf(stderr, "sample convert: not converting %s: an incomplete file (its writer was killed or failed before closing it)\n", f)
			}
		}
	}
	return kept
}

// setBase returns the path a file set is named after: x.jsonl for x-000003.jsonl (see
// output.RotatedName), the path itself otherwise.
func setBase(path string) string {
	ext := filepath.Ext(path)
	stem := path[:len(path)-len(ext)]
	if i := strings.LastIndexByte(stem, '-'); i >= 0 && len(stem)-i-1 == 6 && strings.Trim(stem[i+1:], "0123456789") == "" {
		return stem[:i] + ext
	}
	return path
}

// removeOutput removes what a failed conversion wrote, complete or not.
func removeOutput(w *output.Writer) {
	for _, f := range append(w.Files(), w.Incomplete()...) {
		os.Remove(f)
	}
}
