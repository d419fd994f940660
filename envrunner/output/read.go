package output

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/arrowbatch"
)

// ErrPartial is the error of a reader given a file that its writer did not finish (see
// PartialSuffix): readers skip such files.
var ErrPartial = errors.New("an incomplete file (its writer was killed or failed before closing it); readers skip .partial files")

// checkComplete refuses a .partial file.
func checkComplete(path string) error {
	if IsPartial(path) {
		return fmt.Errorf("output: %s: %w", path, ErrPartial)
	}
	return nil
}

// ReadFile reads the batches of a file written by a Writer (or by RLlib's JSON writer) in
// order and hands each to fn, stopping at fn's first error. The format is f, or the path's
// (FormatOf) when f is FormatAuto. Errors name the file and the line or row group.
func ReadFile(path string, f Format, fn func(*envrunner.MultiAgentBatch) error) error {
	switch f.Resolve(path) {
	case FormatParquet:
		return ReadParquet(path, fn)
	default:
		return ReadJSONLines(path, fn)
	}
}

// ReadJSONLines reads a JSON lines file with Decode, skipping blank lines. A line that
// does not parse (a flipped byte, a last line cut short) is an error naming the file and the
// line; a .partial file is refused (ErrPartial).
func ReadJSONLines(path string, fn func(*envrunner.MultiAgentBatch) error) error {
	if err := checkComplete(path); err != nil {
		return err
	}
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("output: %w", err)
	}
	defer fh.Close()
	r := bufio.NewReaderSize(fh, 1<<20)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			m, derr := Decode(line)
			if derr != nil {
				return fmt.Errorf("output: %s line %d: %w", path, n, derr)
			}
			if ferr := fn(m); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("output: %s: %w", path, err)
		}
	}
}

// ReadParquet reads a Parquet file written by a Writer: each row group is one batch, with the
// EnvSteps recorded in the file's MetaEnvSteps metadata (the row count when it is missing, as
// in a file written by another tool).
//
// A damaged file is an error, never a crash: the page checksums and the file's own (see
// MetaChecksums) are verified before anything is read (ErrChecksum), and a panic of the
// Parquet reader on bad bytes is turned into an error naming the file. A .partial file is
// refused (ErrPartial).
func ReadParquet(path string, fn func(*envrunner.MultiAgentBatch) error) (err error) {
	if err := checkComplete(path); err != nil {
		return err
	}
	inReader := true // false while fn runs: a panic there is the caller's
	defer func() {
		if r := recover(); r != nil {
			if !inReader {
				panic(r)
			}
			err = fmt.Errorf("output: %s: not a readable Parquet file of samples (%v)", path, r)
		}
	}()
	return readParquet(path, func(m *envrunner.MultiAgentBatch) error {
		inReader = false
		err := fn(m)
		inReader = true
		return err
	})
}

func readParquet(path string, fn func(*envrunner.MultiAgentBatch) error) error {
	// The checksums first: damaged bytes must not be read as data.
	if err := verifyParquet(path); err != nil {
		return fmt.Errorf("output: %s: %w", path, err)
	}
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return fmt.Errorf("output: %s: %w", path, err)
	}
	defer pf.Close()
	// The stored Arrow schema is not needed (the column types come from the Parquet schema;
	// fixed-size lists read as lists of one width) and the Arrow reader trusts its lengths:
	// a damaged one can make it allocate without bound. Leave it out.
	fmd := pf.MetaData().FileMetaData
	kept := fmd.KeyValueMetadata[:0:0]
	for _, kv := range fmd.KeyValueMetadata {
		if kv != nil && kv.Key != "ARROW:schema" {
			kept = append(kept, kv)
		}
	}
	fmd.KeyValueMetadata = kept
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		return fmt.Errorf("output: %s: %w", path, err)
	}
	var steps []int
	if v := pf.MetaData().KeyValueMetadata().FindValue(MetaEnvSteps); v != nil {
		if err := json.Unmarshal([]byte(*v), &steps); err != nil {
			return fmt.Errorf("output: %s: metadata %s: %w", path, MetaEnvSteps, err)
		}
		if len(steps) != pf.NumRowGroups() {
			return fmt.Errorf("output: %s: metadata %s has %d values for %d row groups", path, MetaEnvSteps, len(steps), pf.NumRowGroups())
		}
	}
	for g := range pf.NumRowGroups() {
		rec, err := readRowGroup(fr, g)
		if err != nil {
			return fmt.Errorf("output: %s row group %d: %w", path, g, err)
		}
		envSteps := int(rec.NumRows())
		if steps != nil {
			envSteps = steps[g]
		}
		m, err := arrowbatch.ToBatch(rec, envSteps)
		rec.Release()
		if err != nil {
			return fmt.Errorf("output: %s row group %d: %w", path, g, err)
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

// readRowGroup reads row group g as one record.
func readRowGroup(fr *pqarrow.FileReader, g int) (arrow.RecordBatch, error) {
	cols := make([]int, fr.ParquetReader().MetaData().Schema.NumColumns())
	for i := range cols {
		cols[i] = i
	}
	tbl, err := fr.ReadRowGroups(context.Background(), cols, []int{g})
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	arrs := make([]arrow.Array, tbl.NumCols())
	defer func() {
		for _, c := range arrs {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i := range arrs {
		chunks := tbl.Column(i).Data().Chunks()
		switch len(chunks) {
		case 0:
			arrs[i] = array.MakeArrayOfNull(memory.DefaultAllocator, tbl.Schema().Field(i).Type, 0)
		case 1:
			chunks[0].Retain()
			arrs[i] = chunks[0]
		default:
			c, err := array.Concatenate(chunks, memory.DefaultAllocator)
			if err != nil {
				return nil, err
			}
			arrs[i] = c
		}
	}
	return array.NewRecordBatch(tbl.Schema(), arrs, tbl.NumRows()), nil
}

// ParquetMetadata returns the key-value metadata of a Parquet file, without the keys that
// describe the file itself (the stored Arrow schema, MetaEnvSteps and MetaChecksums): what a
// copy of its data should carry.
func ParquetMetadata(path string) (map[string]string, error) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("output: %s: %w", path, err)
	}
	defer pf.Close()
	kv := pf.MetaData().KeyValueMetadata()
	m := make(map[string]string, kv.Len())
	for i, k := range kv.Keys() {
		if k == "ARROW:schema" || k == MetaEnvSteps || k == MetaChecksums {
			continue
		}
		m[k] = kv.Values()[i]
	}
	return m, nil
}
