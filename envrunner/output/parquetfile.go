package output

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/arrowbatch"
)

// MetaEnvSteps is the key of the file metadata that lists the EnvSteps of each row group (a
// JSON array): a row group is one MultiAgentBatch, and this is what ReadParquet needs to give
// the batches back as they were written.
const MetaEnvSteps = "onnxrl.env_steps"

// metaArrowSchema is the key under which Arrow writers store the Arrow schema (an IPC schema
// message, base64), so that Arrow readers (pyarrow, pqarrow) give the fixed-size lists back
// rather than plain lists.
const metaArrowSchema = "ARROW:schema"

// dataPageSize is the target size of a data page before compression. Pages of 16 KiB keep
// the column writers' buffers small and warm in the cache; with the default 1 MiB a row group
// of 51,200 CartPole rows allocated 32 MB and took 1.6 times as long (BenchmarkWriter).
const dataPageSize = 16 << 10

// parquetEncoder writes each batch as one row group of a Parquet file, column by column,
// straight from the batches' columns with Parquet's column writers (see parquetcols.go). The
// file's writer is made at the first batch of each file, from that batch's layout; every later
// batch of the file must have the same layout.
type parquetEncoder struct {
	meta  map[string]string
	opts  []parquet.WriterProperty
	props *parquet.WriterProperties // of the current file
	cols  columnWriter

	fw       *file.Writer // nil before the file's first batch
	crc      *crcWriter   // between fw and the file: page checksums (pagecrc.go)
	layout   arrowbatch.Layout
	envSteps []int
	ids      []string
	batches  []*envrunner.SampleBatch
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
		// for nothing.
		parquet.WithDictionaryDefault(false),
		parquet.WithMaxRowGroupLength(1 << 40),
		parquet.WithDataPageSize(dataPageSize),
		// Version 2 pages leave the (tiny) level runs uncompressed: only the values go
		// through the codec.
		parquet.WithDataPageVersion(parquet.DataPageV2),
	}
	if c == Zstd {
		opts = append(opts, parquet.WithCompressionLevel(1))
	}
	return &parquetEncoder{meta: meta, opts: opts, props: parquet.NewWriterProperties(opts...)}
}

// noClose hides the Close of the file buffer from the Parquet writer, which would close it.
type noClose struct{ io.Writer }

// open starts a Parquet file of layout l: the schema pqarrow would give the Arrow schema of
// l, and that Arrow schema in the metadata.
func (e *parquetEncoder) open(dst io.Writer, l arrowbatch.Layout) error {
	sc := arrowbatch.Schema(l, e.meta)
	pqs, err := pqarrow.ToParquet(sc, e.props, pqarrow.DefaultWriterProps())
	if err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	opts := e.opts
	for i := range pqs.NumColumns() {
		c := pqs.Column(i)
		// Minima and maxima of the values inside vector rows select nothing a reader would
		// filter on; they cost 5% of the writer's time.
		if c.MaxRepetitionLevel() > 0 {
			opts = append(opts[:len(opts):len(opts)], parquet.WithStatsPath(c.ColumnPath(), false))
		}
	}
	e.props = parquet.NewWriterProperties(opts...)
	kv := make(metadata.KeyValueMetadata, 0, len(e.meta)+2)
	md := sc.Metadata()
	for i, k := range md.Keys() {
		kv.Append(k, md.Values()[i])
	}
	kv.Append(metaArrowSchema, base64.StdEncoding.EncodeToString(flight.SerializeSchema(storedSchema(sc), e.props.Allocator())))
	e.crc = newCRCWriter(dst)
	fw, err := file.NewParquetWriterWithError(noClose{e.crc}, pqs.Root(), file.WithWriterProps(e.props), file.WithWriteMetadata(kv))
	if err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	e.fw, e.layout, e.envSteps = fw, l, e.envSteps[:0]
	e.layout.StateWidths = append([]int(nil), l.StateWidths...)
	return nil
}

// storedSchema names list elements "element", as the Parquet schema does, so that readers
// that match the stored Arrow schema to Parquet column paths find them (pqarrow does the same).
func storedSchema(sc *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, sc.NumFields())
	for i, f := range sc.Fields() {
		switch t := f.Type.(type) {
		case *arrow.FixedSizeListType:
			elem := t.ElemField()
			elem.Name = "element"
			f.Type = arrow.FixedSizeListOfField(t.Len(), elem)
		case *arrow.ListType:
			elem := t.ElemField()
			elem.Name = "element"
			f.Type = arrow.ListOfField(elem)
		}
		fields[i] = f
	}
	md := sc.Metadata()
	return arrow.NewSchema(fields, &md)
}

func (e *parquetEncoder) write(dst io.Writer, m *envrunner.MultiAgentBatch) error {
	l, ok, err := arrowbatch.LayoutOf(m)
	if err != nil || !ok {
		return err
	}
	if e.fw == nil {
		if err := e.open(dst, l); err != nil {
			return err
		}
	} else if !l.Equal(e.layout) {
		return fmt.Errorf("a batch with other columns than the file's first batch (want %s, got %s); one file holds one layout", e.layout, l)
	}
	e.ids = e.ids[:0]
	e.batches = e.batches[:0]
	for id, b := range m.PolicyBatches {
		if b != nil && b.Count > 0 {
			e.ids = append(e.ids, id)
		}
	}
	slices.Sort(e.ids)
	for _, id := range e.ids {
		e.batches = append(e.batches, m.PolicyBatches[id])
	}
	rgw, err := e.fw.AppendRowGroupChecked()
	if err == nil {
		err = e.cols.writeRowGroup(rgw, l, e.ids, e.batches)
		if cerr := rgw.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	e.envSteps = append(e.envSteps, m.EnvSteps)
	return nil
}

// endFile writes the footer. A file that got no batch gets the schema of an empty layout and
// no rows, so that it is still a valid Parquet file.
func (e *parquetEncoder) endFile(dst io.Writer) error {
	if e.fw == nil {
		if err := e.open(dst, arrowbatch.Layout{}); err != nil {
			return err
		}
	}
	if e.envSteps == nil {
		e.envSteps = []int{}
	}
	steps, err := json.Marshal(e.envSteps)
	if err == nil {
		err = e.fw.AppendKeyValueMetadata(MetaEnvSteps, string(steps))
	}
	if err == nil {
		err = e.crc.footer()
	}
	if err == nil {
		err = e.fw.Close()
	}
	if err == nil {
		err = e.crc.end()
	}
	e.fw, e.envSteps = nil, e.envSteps[:0]
	if err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	return nil
}
