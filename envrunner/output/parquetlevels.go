package output

import "encoding/binary"

// Parquet's RLE/bit-packed hybrid encoding, of levels and dictionary indices: a sequence of
// runs, each an RLE run (a header count<<1, then the value in ceil(width/8) bytes) or a
// bit-packed run (a header groups<<1|1, then groups of 8 values of width bits each, LSB
// first). The levels of the writer's columns are mostly constant or periodic, so most are
// written without looking at a value (listLevels).

// appendRLERun appends an RLE run of n copies of v.
func appendRLERun(dst []byte, n int, v uint32, width int) []byte {
	dst = binary.AppendUvarint(dst, uint64(n)<<1)
	for i := 0; i < width; i += 8 {
		dst = append(dst, byte(v>>i))
	}
	return dst
}

// appendBitPacked appends a bit-packed run of v, the last group padded with zeros.
func appendBitPacked(dst []byte, v []uint32, width int) []byte {
	groups := (len(v) + 7) / 8
	dst = binary.AppendUvarint(dst, uint64(groups)<<1|1)
	var acc uint64
	bits := 0
	for i := range groups * 8 {
		var x uint32
		if i < len(v) {
			x = v[i]
		}
		acc |= uint64(x) << bits
		bits += width
		for bits >= 8 {
			dst = append(dst, byte(acc))
			acc >>= 8
			bits -= 8
		}
	}
	return dst
}

// appendHybrid appends v in the hybrid encoding: repeats of 8 or more as RLE runs, the
// rest bit-packed.
func appendHybrid(dst []byte, v []uint32, width int) []byte {
	lit := 0 // v[lit:i] are not written yet
	for i := 0; i < len(v); {
		j := i + 1
		for j < len(v) && v[j] == v[i] {
			j++
		}
		if j-i >= 8 {
			// The values before the run go out as whole groups of 8, the run lending the
			// last group what it lacks.
			if k := i - lit; k > 0 {
				i += (8 - k%8) % 8
				dst = appendBitPacked(dst, v[lit:i], width)
			}
			dst = appendRLERun(dst, j-i, v[i], width)
			lit = j
		}
		i = j
	}
	if lit < len(v) {
		dst = appendBitPacked(dst, v[lit:], width)
	}
	return dst
}

// bitWidth is the number of bits of the largest of n dictionary indices (at least 1, as
// Arrow's writer does).
func bitWidth(n int) int {
	w := 1
	for n-1 >= 1<<w {
		w++
	}
	return w
}

// listLevels gives the levels of pages of rows of a required list of required values of
// width w (max repetition and definition level 1): every value defined, the first of a row
// repetition 0 and the others 1; an empty list (width 0) a level 0 of each kind per row.
// The repetition levels of a width are periodic: their bit-packed bytes (or, for wide rows,
// their RLE runs) are made once and reused.
type listLevels struct {
	packed map[int][]byte // by width: the bit-packed repetition levels of the rows so far
	runs   map[int][]byte // by width: the RLE runs of one row
	buf    []byte
}

// wideRow is the width from which RLE runs (about 4 bytes a row) take less than bit-packing
// (w/8 bytes a row).
const wideRow = 32

// levels returns the levels of rows rows of width w, the repetition levels first, and the
// length of those; the result is valid until the next call.
func (l *listLevels) levels(w, rows int) ([]byte, int) {
	b := l.buf[:0]
	switch {
	case w == 0:
		b = appendRLERun(b, rows, 0, 1)
		n := len(b)
		b = appendRLERun(b, rows, 0, 1)
		l.buf = b
		return b, n
	case w == 1:
		b = appendRLERun(b, rows, 0, 1)
	case w < wideRow:
		if l.packed == nil {
			l.packed = map[int][]byte{}
		}
		need := (rows*w + 7) / 8
		p := l.packed[w]
		if len(p) < need {
			p = make([]byte, max(need, 2*len(p)))
			for i := range len(p) * 8 {
				if i%w != 0 {
					p[i/8] |= 1 << (i % 8)
				}
			}
			l.packed[w] = p
		}
		b = binary.AppendUvarint(b, uint64(need)<<1|1)
		b = append(b, p[:need]...)
	default:
		if l.runs == nil {
			l.runs = map[int][]byte{}
		}
		run := l.runs[w]
		if run == nil {
			run = appendRLERun(appendRLERun(nil, 1, 0, 1), w-1, 1, 1)
			l.runs[w] = run
		}
		for range rows {
			b = append(b, run...)
		}
	}
	n := len(b)
	b = appendRLERun(b, rows*w, 1, 1)
	l.buf = b
	return b, n
}
