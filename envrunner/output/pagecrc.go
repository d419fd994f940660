package output

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sort"
)

// Page checksums. Parquet's PageHeader has a crc field (field 4): the CRC-32 (IEEE, as
// zlib's) of the page's bytes as written after the header (compressed_page_size bytes),
// which pyarrow verifies with page_checksum_verification=True. The pinned arrow-go
// (v18.8.0) neither writes nor checks it, so the Parquet writer's bytes pass through a
// crcWriter that adds it to every page header, and readers check it (verify.go).
//
// A header grows by the field (2 to 6 bytes), which moves everything after it: the
// crcWriter remembers by how much, and rewrites the offsets and sizes in the footer that
// arrow-go computed without it. The footer also gets MetaChecksums, the CRC-32 of all bytes
// before the footer and of the footer itself, so that a damaged page header or footer (which
// page checksums do not cover) is found too.

// MetaChecksums is the key of the file metadata that holds the file's own checksums:
// "crc32 data=XXXXXXXX footer=YYYYYYYY", the CRC-32 (hex) of the bytes before the footer
// and of the footer (the Thrift FileMetaData) with YYYYYYYY read as 00000000.
const MetaChecksums = "onnxrl.checksums"

const parquetMagic = "PAR1"

// Field ids of Parquet's Thrift structs (parquet.thrift) that the checksums touch.
const (
	pageHeaderCompressedSize = 3
	pageHeaderCRC            = 4

	fileMetaRowGroups = 4
	fileMetaKeyValue  = 5

	rowGroupColumns        = 1
	rowGroupTotalByteSize  = 2
	rowGroupFileOffset     = 5
	rowGroupTotalCompSize  = 6
	chunkFileOffset        = 2
	chunkMeta              = 3
	chunkOffsetIndexOffset = 4
	chunkColumnIndexOffset = 6
	metaPathInSchema       = 3
	metaTotalUncompressed  = 6
	metaTotalCompressed    = 7
	metaDataPageOffset     = 9
	metaIndexPageOffset    = 10
	metaDictPageOffset     = 11
	metaBloomFilterOffset  = 14
)

// crcWriter passes a Parquet file's bytes to w, adding the crc to each page header and
// fixing the footer (see above). The Parquet writer must announce its footer (footer) before
// writing it, and end must be called after it.
type crcWriter struct {
	w      io.Writer
	buf    []byte // bytes not passed on yet
	magic  bool   // the leading magic has been passed on
	inFoot bool
	hdr    []byte // scratch for a header
	// shifts: the header at original offset at grew the file, with the headers before it,
	// by moved bytes: what follows it moved by that much.
	shifts []shift
	total  int64 // original bytes consumed
	moved  int64 // bytes added so far
	data   uint32
	err    error
}

type shift struct{ at, moved int64 }

func newCRCWriter(w io.Writer) *crcWriter { return &crcWriter{w: w} }

func (c *crcWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n := len(p)
	// The Parquet writer writes a page's header and then its bytes: when buf holds just the
	// header, the page goes out from p without a copy.
	if c.magic && !c.inFoot && len(c.buf) > 0 {
		r := tReader{b: c.buf}
		size, err := r.skipStruct(0, pageHeaderCompressedSize)
		if err == nil && r.pos == len(c.buf) && size >= 0 && int64(len(p)) >= size {
			if c.err = c.page(c.buf, p[:size]); c.err != nil {
				return 0, c.err
			}
			c.total += int64(len(c.buf)) + size
			c.buf = c.buf[:0]
			p = p[size:]
		}
	}
	c.buf = append(c.buf, p...)
	if !c.inFoot {
		c.err = c.pages()
	}
	if c.err != nil {
		return 0, c.err
	}
	return n, nil
}

// out passes b on, counting it into the data checksum.
func (c *crcWriter) out(b []byte) error {
	c.data = crc32.Update(c.data, crc32.IEEETable, b)
	_, err := c.w.Write(b)
	return err
}

// pages passes on every complete page in buf.
func (c *crcWriter) pages() error {
	if !c.magic {
		if len(c.buf) < len(parquetMagic) {
			return nil
		}
		if string(c.buf[:4]) != parquetMagic {
			return errors.New("page checksums: the Parquet writer's output does not start with PAR1")
		}
		if err := c.out(c.buf[:4]); err != nil {
			return err
		}
		c.consume(4)
		c.magic = true
	}
	for len(c.buf) > 0 {
		r := tReader{b: c.buf}
		size, err := r.skipStruct(0, pageHeaderCompressedSize)
		if errors.Is(err, errThriftShort) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("page checksums: a page header at byte %d: %w", c.total, err)
		}
		n := r.pos
		if size < 0 {
			return fmt.Errorf("page checksums: a page header at byte %d has a negative size", c.total)
		}
		if int64(len(c.buf)-n) < size {
			return nil
		}
		if err := c.page(c.buf[:n], c.buf[n:n+int(size)]); err != nil {
			return err
		}
		c.consume(n + int(size))
	}
	return nil
}

// page passes on a page: its header hdr with the crc of its bytes added, then the bytes.
func (c *crcWriter) page(hdr, page []byte) error {
	crc := int32(crc32.ChecksumIEEE(page))
	c.hdr = spliceCRC(c.hdr[:0], hdr, crc)
	if c.hdr == nil {
		h, _, err := readThriftStruct(hdr)
		if err != nil {
			return fmt.Errorf("page checksums: a page header at byte %d: %w", c.total, err)
		}
		h.setField(pageHeaderCRC, tValue{typ: tI32, i: int64(crc)})
		c.hdr = appendStruct(c.hdr[:0], &h)
	}
	if by := int64(len(c.hdr) - len(hdr)); by != 0 {
		c.moved += by
		c.shifts = append(c.shifts, shift{at: c.total, moved: c.moved})
	}
	if err := c.out(c.hdr); err != nil {
		return err
	}
	return c.out(page)
}

// spliceCRC appends to dst the header hdr with field 4 (crc) inserted after fields 1 to 3,
// as arrow-go writes them (three short-form i32 fields, then a field of a higher id in short
// form, or the stop byte); nil when hdr has another shape (page then re-encodes it).
func spliceCRC(dst, hdr []byte, crc int32) []byte {
	r := tReader{b: hdr}
	for range 3 {
		if h, err := r.byte1(); err != nil || h != 1<<4|tI32 {
			return nil
		}
		if _, err := r.uvarint(); err != nil {
			return nil
		}
	}
	p := r.pos
	if p >= len(hdr) {
		return nil
	}
	next := hdr[p]
	d := next >> 4
	if next != 0 && d < 2 {
		return nil
	}
	dst = append(dst, hdr[:p]...)
	dst = appendZigzag(append(dst, 1<<4|tI32), int64(crc))
	if next == 0 {
		return append(dst, hdr[p:]...)
	}
	dst = append(dst, (d-1)<<4|next&0x0f)
	return append(dst, hdr[p+1:]...)
}

func (c *crcWriter) consume(n int) {
	c.total += int64(n)
	c.buf = c.buf[:copy(c.buf, c.buf[n:])]
}

// footer announces that the rest is the footer: FileMetaData, its length, PAR1.
func (c *crcWriter) footer() error {
	if c.err == nil && len(c.buf) > 0 {
		c.err = fmt.Errorf("page checksums: %d bytes of an incomplete page before the footer", len(c.buf))
	}
	c.inFoot = true
	return c.err
}

// newOffset maps an offset of the Parquet writer's bytes to the file's.
func (c *crcWriter) newOffset(x int64) int64 {
	// A header that starts at x moved what follows it, not x itself.
	k := sort.Search(len(c.shifts), func(i int) bool { return c.shifts[i].at >= x })
	if k == 0 {
		return x
	}
	return x + c.shifts[k-1].moved
}

// end rewrites and passes on the footer, and resets the writer for the next file.
func (c *crcWriter) end() error {
	defer func() { *c = crcWriter{w: c.w, buf: c.buf[:0], hdr: c.hdr, shifts: c.shifts[:0]} }()
	if c.err != nil {
		return c.err
	}
	b := c.buf
	if len(b) < 8 || string(b[len(b)-4:]) != parquetMagic || int(binary.LittleEndian.Uint32(b[len(b)-8:])) != len(b)-8 {
		return errors.New("page checksums: the Parquet writer's footer is not FileMetaData, length, PAR1")
	}
	fmd, n, err := readThriftStruct(b[:len(b)-8])
	if err != nil || n != len(b)-8 {
		return fmt.Errorf("page checksums: the Parquet writer's footer: %v", err)
	}
	c.fixOffsets(&fmd)
	// The footer with its own checksum as 00000000, then the same bytes with it filled in.
	value := fmt.Sprintf("crc32 data=%08x footer=00000000", c.data)
	kv := fmd.field(fileMetaKeyValue)
	if kv == nil {
		fmd.setField(fileMetaKeyValue, tValue{typ: tList, elem: tStruct})
		kv = fmd.field(fileMetaKeyValue)
	}
	// A key of the same name in Options.Metadata (a file copied) is not this file's.
	kv.elems = slices.DeleteFunc(kv.elems, func(e tValue) bool {
		k := e.field(1)
		return k != nil && string(k.b) == MetaChecksums
	})
	kv.elems = append(kv.elems, tValue{typ: tStruct, fields: []tField{
		{id: 1, v: tValue{typ: tBinary, b: []byte(MetaChecksums)}},
		{id: 2, v: tValue{typ: tBinary, b: []byte(value)}},
	}})
	foot := appendStruct(nil, &fmd)
	at := bytes.LastIndex(foot, []byte(value))
	copy(foot[at+len(value)-8:], fmt.Sprintf("%08x", crc32.ChecksumIEEE(foot)))
	if err := c.out(foot); err != nil {
		return err
	}
	foot = binary.LittleEndian.AppendUint32(foot[:0], uint32(len(foot)))
	return c.out(append(foot, parquetMagic...))
}

// fixOffsets moves the footer's offsets and sizes by the bytes the page checksums added.
func (c *crcWriter) fixOffsets(fmd *tValue) {
	rgs := fmd.field(fileMetaRowGroups)
	if rgs == nil || c.moved == 0 {
		return
	}
	move := func(v *tValue, id int16) {
		if f := v.field(id); f != nil && f.i > 0 {
			f.i = c.newOffset(f.i)
		}
	}
	for g := range rgs.elems {
		rg := &rgs.elems[g]
		var added int64
		if cols := rg.field(rowGroupColumns); cols != nil {
			for k := range cols.elems {
				cc := &cols.elems[k]
				move(cc, chunkFileOffset)
				move(cc, chunkOffsetIndexOffset)
				move(cc, chunkColumnIndexOffset)
				md := cc.field(chunkMeta)
				if md == nil {
					continue
				}
				start := chunkStart(md)
				if size := md.field(metaTotalCompressed); size != nil {
					by := c.newOffset(start+size.i) - c.newOffset(start)
					by, size.i = by-size.i, by
					added += by
					if u := md.field(metaTotalUncompressed); u != nil {
						u.i += by
					}
				}
				move(md, metaDataPageOffset)
				move(md, metaIndexPageOffset)
				move(md, metaDictPageOffset)
				move(md, metaBloomFilterOffset)
			}
		}
		if f := rg.field(rowGroupTotalByteSize); f != nil {
			f.i += added
		}
		if f := rg.field(rowGroupTotalCompSize); f != nil {
			f.i += added
		}
		move(rg, rowGroupFileOffset)
	}
}

// chunkStart is where a column chunk's pages start: its dictionary page, or its first data
// page.
func chunkStart(md *tValue) int64 {
	start := int64(0)
	if f := md.field(metaDataPageOffset); f != nil {
		start = f.i
	}
	if f := md.field(metaDictPageOffset); f != nil && f.i > 0 && f.i < start {
		start = f.i
	}
	return start
}
