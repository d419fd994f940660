package output

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
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

// parquetEncoder writes each batch as one row group of a Parquet file, column by column,
// straight from the batches' columns (see parquetcols.go and parquetpage.go). The file's
// schema is made at the first batch of each file, from that batch's layout; every later
// batch of the file must have the same layout. The footer is made with Arrow's metadata
// builder when the file ends.
type parquetEncoder struct {
	meta    map[string]string
	props   *parquet.WriterProperties
	cols    columnWriter
	err     error // of making the codec
	started bool  // the current file has its magic and schema
	kv      metadata.KeyValueMetadata
	layout  arrowbatch.Layout
	// Of the current file: the rows of each row group and the EnvSteps of its batch.
	groupRows []int
	envSteps  []int
	ids       []string
	batches   []*envrunner.SampleBatch
	foot      bytes.Buffer
}

// newParquetEncoder returns an encoder of pages of pageSize bytes of values (dataPageSize
// when 0).
func newParquetEncoder(c Compression, meta map[string]string, pageSize int) *parquetEncoder {
	codec, id, err := newPageCodec(c)
	e := &parquetEncoder{meta: meta, err: err, props: parquet.NewWriterProperties(
		parquet.WithCompression(id),
		parquet.WithCreatedBy("onnxrl sampler"),
		parquet.WithDataPageVersion(parquet.DataPageV2),
	)}
	e.cols.p.codec = codec
	e.cols.pageSize = cmp.Or(pageSize, dataPageSize)
	return e
}

// open starts a Parquet file of layout l: the schema pqarrow would give the Arrow schema of
// l, and that Arrow schema in the metadata.
func (e *parquetEncoder) open(dst io.Writer, l arrowbatch.Layout) error {
	if e.err != nil {
		return fmt.Errorf("parquet: %w", e.err)
	}
	sc := arrowbatch.Schema(l, e.meta)
	pqs, err := pqarrow.ToParquet(sc, e.props, pqarrow.DefaultWriterProps())
	if err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	kv := make(metadata.KeyValueMetadata, 0, len(e.meta)+3)
	md := sc.Metadata()
	for i, k := range md.Keys() {
		// A key of the same name in Options.Metadata (a file copied) is not this file's.
		if k != MetaChecksums {
			kv.Append(k, md.Values()[i])
		}
	}
	kv.Append(metaArrowSchema, base64.StdEncoding.EncodeToString(flight.SerializeSchema(storedSchema(sc), e.props.Allocator())))
	e.kv, e.layout, e.started = kv, l, true
	e.layout.StateWidths = append([]int(nil), l.StateWidths...)
	e.groupRows, e.envSteps = e.groupRows[:0], e.envSteps[:0]
	e.cols.schema, e.cols.chunks, e.cols.arena = pqs, e.cols.chunks[:0], e.cols.arena[:0]
	e.cols.p.reset(dst, pqs.NumColumns())
	e.cols.p.out([]byte(parquetMagic))
	return e.cols.p.err
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
	if !e.started {
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
	rows := 0
	for _, id := range e.ids {
		e.batches = append(e.batches, m.PolicyBatches[id])
		rows += m.PolicyBatches[id].Count
	}
	if err := e.cols.writeRowGroup(l, e.ids, e.batches); err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	e.groupRows = append(e.groupRows, rows)
	e.envSteps = append(e.envSteps, m.EnvSteps)
	return nil
}

// endFile writes the footer. A file that got no batch gets the schema of an empty layout and
// no rows, so that it is still a valid Parquet file.
func (e *parquetEncoder) endFile(dst io.Writer) error {
	if !e.started {
		if err := e.open(dst, arrowbatch.Layout{}); err != nil {
			return err
		}
	}
	e.started = false
	if err := e.footer(); err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	return nil
}

// footer writes the file's footer: the FileMetaData, with MetaEnvSteps and MetaChecksums
// last, its length and the magic.
func (e *parquetEncoder) footer() error {
	p := &e.cols.p
	if p.err != nil {
		return p.err
	}
	fmb := metadata.NewFileMetadataBuilder(e.cols.schema, e.props, e.kv)
	ncols := e.cols.schema.NumColumns()
	if len(e.cols.chunks) != ncols*len(e.groupRows) {
		return fmt.Errorf("%d column chunks for %d row groups of %d columns", len(e.cols.chunks), len(e.groupRows), ncols)
	}
	for g, rows := range e.groupRows {
		rg := fmb.AppendRowGroup()
		rg.SetNumRows(rows)
		for _, ch := range e.cols.chunks[g*ncols : (g+1)*ncols] {
			cc := rg.NextColumnChunk()
			if ch.stats.on {
				st := metadata.EncodedStatistics{HasNullCount: true, NullCount: ch.stats.nulls,
					Signed: cc.Descr().SortOrder() == schema.SortSIGNED}
				if ch.stats.minMax {
					st.Min, st.Max = e.cols.statBytes(&ch.stats)
					st.HasMin, st.HasMax = true, true
				}
				cc.SetStats(st)
			}
			enc := metadata.EncodingStats{DataEncodingStats: map[parquet.Encoding]int32{parquet.Encoding(ch.dataEncoding): ch.dataPages}}
			if ch.dictPages > 0 {
				enc.DictEncodingStats = map[parquet.Encoding]int32{parquet.Encodings.Plain: ch.dictPages}
			}
			info := metadata.ChunkMetaInfo{NumValues: ch.values, DictPageOffset: ch.dictOffset, IndexPageOffset: -1,
				DataPageOffset: ch.dataOffset, CompressedSize: ch.compressed, UncompressedSize: ch.uncompressed}
			if err := cc.Finish(info, ch.dictPages > 0, false, enc); err != nil {
				return err
			}
		}
		if err := rg.Finish(0, int16(g)); err != nil {
			return err
		}
	}
	steps, err := json.Marshal(append([]int{}, e.envSteps...))
	if err != nil {
		return err
	}
	if err := fmb.AppendKeyValueMetadata(MetaEnvSteps, string(steps)); err != nil {
		return err
	}
	// The footer with its own checksum as 00000000, then the same bytes with it filled in.
	sums := fmt.Sprintf("crc32 data=%08x footer=00000000", p.data)
	if err := fmb.AppendKeyValueMetadata(MetaChecksums, sums); err != nil {
		return err
	}
	fmd, err := fmb.Finish()
	if err != nil {
		return err
	}
	e.foot.Reset()
	if _, err := fmd.WriteTo(&e.foot, nil); err != nil {
		return err
	}
	foot := e.foot.Bytes()
	at := bytes.LastIndex(foot, []byte(sums))
	if at < 0 {
		return errors.New("the footer does not hold its checksums")
	}
	copy(foot[at+len(sums)-8:], fmt.Sprintf("%08x", crc32.ChecksumIEEE(foot)))
	p.out(foot)
	p.out(binary.LittleEndian.AppendUint32(nil, uint32(len(foot))))
	p.out([]byte(parquetMagic))
	return p.err
}
