package output

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strings"
)

// ErrChecksum is the error of a reader that found a file's bytes changed since they were
// written (a flipped bit on the disk or on the way): a page checksum, or the file's own
// checksums (MetaChecksums), do not match.
var ErrChecksum = errors.New("checksum mismatch: the file was damaged after it was written")

// maxFooter bounds the footer read: a damaged length must not make the reader allocate
// without bound.
const maxFooter = 64 << 20

// verifyParquet checks a Parquet file's checksums before its data is read: the magic bytes,
// the footer, and either the file's own checksums (MetaChecksums, written by this package)
// or, for files written elsewhere, each page's crc where its header has one.
func verifyParquet(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return verifyParquetAt(f, fi.Size())
}

func verifyParquetAt(f io.ReaderAt, size int64) error {
	if size < 12 {
		return errors.New("not a Parquet file: too short")
	}
	var head, tail [8]byte
	if _, err := f.ReadAt(head[:4], 0); err != nil {
		return err
	}
	if _, err := f.ReadAt(tail[:], size-8); err != nil {
		return err
	}
	if string(head[:4]) != parquetMagic || string(tail[4:]) != parquetMagic {
		return errors.New("not a Parquet file: no PAR1 at its start and end")
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n > size-12 || n > maxFooter {
		return fmt.Errorf("footer length %d does not fit a file of %d bytes", n, size)
	}
	foot := make([]byte, n)
	if _, err := f.ReadAt(foot, size-8-n); err != nil {
		return err
	}
	fmd, k, err := readThriftStruct(foot)
	if err != nil || int64(k) != n {
		return fmt.Errorf("damaged footer (%v)", cmpErr(err, errThriftBad))
	}
	if sums, ok := keyValue(&fmd, MetaChecksums); ok {
		return verifySums(f, size-8-n, foot, sums)
	}
	if bytes.Contains(foot, []byte("crc32 data=")) {
		return fmt.Errorf("%w: the footer's %s entry is damaged", ErrChecksum, MetaChecksums)
	}
	return verifyPages(f, size-8-n, &fmd)
}

func cmpErr(err, or error) error {
	if err != nil {
		return err
	}
	return or
}

// keyValue finds key in the footer's key-value metadata.
func keyValue(fmd *tValue, key string) (string, bool) {
	kv := fmd.field(fileMetaKeyValue)
	if kv == nil {
		return "", false
	}
	for k := range kv.elems {
		e := &kv.elems[k]
		if name := e.field(1); name != nil && string(name.b) == key {
			if v := e.field(2); v != nil {
				return string(v.b), true
			}
			return "", true
		}
	}
	return "", false
}

// verifySums checks the file's own checksums (see MetaChecksums): the footer's, then the
// data's; a data mismatch is then looked for page by page to say where.
func verifySums(f io.ReaderAt, footAt int64, foot []byte, sums string) error {
	var data, footer uint32
	const format = "crc32 data=%08x footer=%08x"
	if _, err := fmt.Sscanf(sums, format, &data, &footer); err != nil || fmt.Sprintf(format, data, footer) != sums {
		return fmt.Errorf("%w: metadata %s is %q", ErrChecksum, MetaChecksums, sums)
	}
	at := bytes.LastIndex(foot, []byte(sums))
	zeroed := append([]byte(nil), foot...)
	copy(zeroed[at+len(sums)-8:], "00000000")
	if got := crc32.ChecksumIEEE(zeroed); got != footer {
		return fmt.Errorf("%w: the footer's crc32 is %08x, written %08x", ErrChecksum, got, footer)
	}
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, footAt)); err != nil {
		return err
	}
	if got := h.Sum32(); got != data {
		fmd, _, _ := readThriftStruct(foot)
		if err := verifyPages(f, footAt, &fmd); err != nil {
			return err
		}
		return fmt.Errorf("%w: the crc32 of the bytes before the footer is %08x, written %08x (a page header or the space between pages)", ErrChecksum, got, data)
	}
	return nil
}

// verifyPages walks the pages of every column chunk and checks each page's crc where its
// header has one.
func verifyPages(f io.ReaderAt, footAt int64, fmd *tValue) error {
	rgs := fmd.field(fileMetaRowGroups)
	if rgs == nil {
		return nil
	}
	var buf []byte
	for g := range rgs.elems {
		cols := rgs.elems[g].field(rowGroupColumns)
		if cols == nil {
			continue
		}
		for c := range cols.elems {
			md := cols.elems[c].field(chunkMeta)
			if md == nil {
				continue
			}
			name := columnName(md)
			start := chunkStart(md)
			size := md.field(metaTotalCompressed)
			if size == nil || start < 4 || size.i < 0 || start+size.i > footAt {
				return fmt.Errorf("row group %d column %s: the footer places it outside the file's pages", g, name)
			}
			if int64(cap(buf)) < size.i {
				buf = make([]byte, size.i)
			}
			chunk := buf[:size.i]
			if _, err := f.ReadAt(chunk, start); err != nil {
				return err
			}
			for pos := 0; pos < len(chunk); {
				h, n, err := readThriftStruct(chunk[pos:])
				if err != nil {
					return fmt.Errorf("row group %d column %s: damaged page header at byte %d (%v)", g, name, start+int64(pos), err)
				}
				sz := h.field(pageHeaderCompressedSize)
				if sz == nil || sz.i < 0 || sz.i > int64(len(chunk)-pos-n) {
					return fmt.Errorf("row group %d column %s: the page at byte %d runs past its column chunk", g, name, start+int64(pos))
				}
				page := chunk[pos+n : pos+n+int(sz.i)]
				if crc := h.field(pageHeaderCRC); crc != nil && uint32(int32(crc.i)) != crc32.ChecksumIEEE(page) {
					return fmt.Errorf("%w: row group %d column %s: the page at byte %d", ErrChecksum, g, name, start+int64(pos))
				}
				pos += n + len(page)
			}
		}
	}
	return nil
}

// columnName is a column chunk's path in the schema (obs.list.element).
func columnName(md *tValue) string {
	p := md.field(metaPathInSchema)
	if p == nil {
		return "?"
	}
	parts := make([]string, 0, len(p.elems))
	for _, e := range p.elems {
		parts = append(parts, string(e.b))
	}
	return strings.Join(parts, ".")
}
