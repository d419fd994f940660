package output

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/arrowbatch"
)

// MetaEnvSteps is the key of the file metadata that lists the EnvSteps of each row group (a
// JSON array): a row group is one MultiAgentBatch, and this is what ReadParquet needs to give
// the batches back as they were written.
const MetaEnvSteps = "onnxrl.env_steps"

// parquetEncoder writes each batch as one row group of a Parquet file. The file's writer is
// made at the first batch of each file, from that batch's layout; every later batch of the
// file must have the same layout.
type parquetEncoder struct {
	meta     map[string]string
	props    *parquet.WriterProperties
	arrProps pqarrow.ArrowWriterProperties
	builder  arrowbatch.Builder

	fw       *pqarrow.FileWriter // nil before the file's first batch
	schema   *arrow.Schema
	envSteps []int
}

func newParquetEncoder(c Compression, meta map[string]string) *parquetEncoder {
	codec := compress.Codecs.Zstd
	switch c {
	case Snappy:
		codec = compress.Codecs.Snappy
	case Uncompressed:
		codec = compress.Codecs.Uncompressed
	}
	opts := []parquet.WriterProperty{
		parquet.WithCompression(codec),
		parquet.WithCreatedBy("onnxrl sampler"),
		// Float columns rarely repeat: trying a dictionary first and falling back costs time
		// for nothing. module_id repeats on every row.
		parquet.WithDictionaryDefault(false),
		parquet.WithDictionaryFor(arrowbatch.ColModuleID, false),
		parquet.WithMaxRowGroupLength(1 << 40),
	}
	if c == Zstd {
		opts = append(opts, parquet.WithCompressionLevel(1))
	}
	return &parquetEncoder{
		meta:     meta,
		props:    parquet.NewWriterProperties(opts...),
		arrProps: pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()),
	}
}

// noClose hides the Close of the file buffer from pqarrow, which would close it.
type noClose struct{ io.Writer }

func (e *parquetEncoder) write(dst io.Writer, m *envrunner.MultiAgentBatch) error {
	rec, ok, err := e.builder.Build(m, e.meta)
	if err != nil || !ok {
		return err
	}
	defer rec.Release()
	if e.fw == nil {
		fw, err := pqarrow.NewFileWriter(rec.Schema(), noClose{dst}, e.props, e.arrProps)
		if err != nil {
			return fmt.Errorf("parquet: %w", err)
		}
		e.fw, e.schema, e.envSteps = fw, rec.Schema(), e.envSteps[:0]
	} else if !rec.Schema().Equal(e.schema) {
		return fmt.Errorf("a batch with other columns than the file's first batch (want %v, got %v); one file holds one layout", e.schema, rec.Schema())
	}
	if err := e.fw.Write(rec); err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	e.envSteps = append(e.envSteps, m.EnvSteps)
	return nil
}

// endFile writes the footer. A file that got no batch gets the schema of an empty layout and
// no rows, so that it is still a valid Parquet file.
func (e *parquetEncoder) endFile(dst io.Writer) error {
	if e.fw == nil {
		fw, err := pqarrow.NewFileWriter(arrowbatch.Schema(arrowbatch.Layout{}, e.meta), noClose{dst}, e.props, e.arrProps)
		if err != nil {
			return fmt.Errorf("parquet: %w", err)
		}
		e.fw = fw
	}
	if e.envSteps == nil {
		e.envSteps = []int{}
	}
	steps, err := json.Marshal(e.envSteps)
	if err == nil {
		err = e.fw.AppendKeyValueMetadata(MetaEnvSteps, string(steps))
	}
	if err == nil {
		err = e.fw.Close()
	}
	e.fw, e.schema, e.envSteps = nil, nil, e.envSteps[:0]
	if err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	return nil
}
