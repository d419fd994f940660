package output

import (
	"fmt"
	"hash/crc32"
	"io"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Pages. The writer encodes Parquet's pages itself (see parquetcols.go for what goes into
// them): data pages of version 2, whose levels stay uncompressed in front of the values, the
// values PLAIN (or RLE_DICTIONARY for the string ids), every page header with its CRC-32.
// It keeps, for each column chunk, what the footer needs (offsets, sizes, statistics);
// parquetfile.go makes the footer.

// Parquet's page types and encodings, as parquet.thrift numbers them.
const (
	pageDictionary = 2
	pageDataV2     = 3

	encPlain         = 0
	encRLEDictionary = 8
)

// pageCodec compresses a page's values.
type pageCodec interface {
	// encode compresses src, into dst's memory when it is large enough; the result is valid
	// until the next call.
	encode(dst, src []byte) []byte
	compressed() bool
}

type snappyCodec struct{}

func (snappyCodec) encode(dst, src []byte) []byte {
	if n := s2.MaxEncodedLen(len(src)); cap(dst) < n {
		dst = make([]byte, n)
	}
	// The fast block encoder: Arrow's Snappy writer uses the "better" one, which took twice the
	// time for pages of floats that it barely shrinks. Both write the Snappy block format.
	return s2.EncodeSnappy(dst[:cap(dst)], src)
}

func (snappyCodec) compressed() bool { return true }

// zstdCodec is zstd at its fastest level (zstd's level 1), in single frames without a
// checksum of their own (the page has its CRC).
type zstdCodec struct{ enc *zstd.Encoder }

func newZstdCodec() (zstdCodec, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithZeroFrames(true), zstd.WithEncoderCRC(false), zstd.WithAllLitEntropyCompression(true))
	return zstdCodec{enc}, err
}

func (z zstdCodec) encode(dst, src []byte) []byte { return z.enc.EncodeAll(src, dst[:0]) }

func (zstdCodec) compressed() bool { return true }

type noCodec struct{}

func (noCodec) encode(_, src []byte) []byte { return src }

func (noCodec) compressed() bool { return false }

// newPageCodec returns the codec of c and the id the footer records.
func newPageCodec(c Compression) (pageCodec, compress.Compression, error) {
	switch c {
	case Snappy:
		return snappyCodec{}, compress.Codecs.Snappy, nil
	case Zstd:
		z, err := newZstdCodec()
		return z, compress.Codecs.Zstd, err
	case Uncompressed:
		return noCodec{}, compress.Codecs.Uncompressed, nil
	}
	return nil, 0, fmt.Errorf("unknown compression %d", c)
}

// chunkInfo is what the footer records of a column chunk.
type chunkInfo struct {
	dictOffset               int64 // 0: no dictionary page
	dataOffset               int64
	compressed, uncompressed int64 // page headers included
	values                   int64 // levels (values and nulls)
	dictPages, dataPages     int32
	dataEncoding             int32
	stats                    chunkStats
}

// chunkStats are a column chunk's statistics: min and max (PLAIN bytes, in the encoder's
// arena at [at, at+minLen) and after it), and the null count.
type chunkStats struct {
	on             bool // statistics written at all (not for vector columns)
	minMax         bool
	at             int
	minLen, maxLen int
	nulls          int64
}

// pageWriter writes pages to a file and keeps the file's position and the CRC-32 of all its
// bytes (MetaChecksums). It allocates nothing once its buffers have grown to the pages'
// size.
type pageWriter struct {
	dst   io.Writer
	pos   int64
	data  uint32
	codec pageCodec
	col   int     // the column being written
	skip  []int32 // by column: pages to write uncompressed before trying the codec again
	hdr   thriftOut
	comp  []byte
	chunk chunkInfo
	err   error
}

// reset starts a file of cols columns at dst.
func (p *pageWriter) reset(dst io.Writer, cols int) {
	p.dst, p.pos, p.data, p.err = dst, 0, 0, nil
	p.skip = append(p.skip[:0], make([]int32, cols)...)
}

// out writes b to the file.
func (p *pageWriter) out(b []byte) {
	if p.err != nil || len(b) == 0 {
		return
	}
	p.data = crc32.Update(p.data, crc32.IEEETable, b)
	n, err := p.dst.Write(b)
	p.pos += int64(n)
	p.err = err
}

// beginChunk starts the chunk of column col.
func (p *pageWriter) beginChunk(col int) { p.col, p.chunk = col, chunkInfo{dataEncoding: encPlain} }

// dictPage writes a dictionary page of n PLAIN values.
func (p *pageWriter) dictPage(values []byte, n int) {
	comp := p.codec.encode(p.comp, values)
	p.comp = comp[:0]
	h := &p.hdr
	h.reset()
	h.i32(1, pageDictionary)
	h.i32(2, int32(len(values)))
	h.i32(3, int32(len(comp)))
	h.i32(4, int32(crc32.ChecksumIEEE(comp)))
	h.begin(7)
	h.i32(1, int32(n))
	h.i32(2, encPlain)
	h.end()
	h.end()
	p.chunk.dictOffset = p.pos
	p.chunk.dictPages++
	p.chunk.compressed += int64(len(h.b) + len(comp))
	p.chunk.uncompressed += int64(len(h.b) + len(values))
	p.out(h.b)
	p.out(comp)
}

// incompressible: a page whose values the codec shrinks by less than 1/incompressible is
// written uncompressed (a version 2 page says whether it is compressed), and the column's
// next skipPages pages are written uncompressed without trying. Snappy gains nothing on
// the float columns of samples (observations, distribution inputs, values: three quarters
// of a CartPole row) and spent a quarter of the writer's time trying; integer and boolean
// columns shrink 10 to 20 times and stay compressed.
const (
	incompressible = 16
	skipPages      = 32
)

// dataPage writes a data page (version 2) of rows rows: levels, the repetition levels then
// the definition levels (each RLE/bit-packed, without a length: the header has it), and
// values, encoded with enc; n is the number of levels (values and nulls), nulls the levels
// below the column's maximum definition level.
func (p *pageWriter) dataPage(levels []byte, repLen int, values []byte, n, nulls, rows int, enc int32) {
	comp, compressed := values, false
	if skip := &p.skip[p.col]; *skip > 0 {
		*skip--
	} else if p.codec.compressed() {
		c := p.codec.encode(p.comp, values)
		p.comp = c[:0]
		if len(c) <= len(values)-len(values)/incompressible && len(values) > 0 {
			comp, compressed = c, true
		} else {
			*skip = skipPages
		}
	}
	crc := crc32.Update(crc32.ChecksumIEEE(levels), crc32.IEEETable, comp)
	h := &p.hdr
	h.reset()
	h.i32(1, pageDataV2)
	h.i32(2, int32(len(levels)+len(values)))
	h.i32(3, int32(len(levels)+len(comp)))
	h.i32(4, int32(crc))
	h.begin(8)
	h.i32(1, int32(n))
	h.i32(2, int32(nulls))
	h.i32(3, int32(rows))
	h.i32(4, enc)
	h.i32(5, int32(len(levels)-repLen))
	h.i32(6, int32(repLen))
	h.boolean(7, compressed)
	h.end()
	h.end()
	if p.chunk.dataPages == 0 {
		p.chunk.dataOffset = p.pos
	}
	p.chunk.dataPages++
	p.chunk.dataEncoding = enc
	p.chunk.values += int64(n)
	p.chunk.compressed += int64(len(h.b) + len(levels) + len(comp))
	p.chunk.uncompressed += int64(len(h.b) + len(levels) + len(values))
	p.out(h.b)
	p.out(levels)
	p.out(comp)
}
