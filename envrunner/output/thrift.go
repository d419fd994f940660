package output

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A small codec for Thrift's compact protocol, the encoding of Parquet's page headers and
// footer: enough to read a struct into a tree, for the checks of the page checksums and the
// file's own (verify.go) that the pinned arrow-go does not make, and to write page headers
// (thriftOut, for parquetpage.go).

// Compact protocol type ids.
const (
	tBoolTrue  = 1
	tBoolFalse = 2
	tByte      = 3
	tI16       = 4
	tI32       = 5
	tI64       = 6
	tDouble    = 7
	tBinary    = 8
	tList      = 9
	tSet       = 10
	tMap       = 11
	tStruct    = 12
)

// thriftMaxDepth bounds the nesting of a value read (Parquet's structs nest a few levels).
const thriftMaxDepth = 32

var (
	// errThriftShort: the bytes end inside a value (a writer may send more).
	errThriftShort = errors.New("thrift: truncated")
	errThriftBad   = errors.New("thrift: malformed")
)

// tValue is a value of the compact protocol: an integer or bool (i), a binary or double
// (b, aliasing the bytes read), a struct (fields in order), a list or set (elems of elem),
// or a map (keys and vals of key and val).
type tValue struct {
	typ      byte // tBoolTrue for booleans (i is 0 or 1)
	i        int64
	b        []byte
	fields   []tField
	elem     byte
	elems    []tValue
	key, val byte
	keys     []tValue
	vals     []tValue
}

type tField struct {
	id int16
	v  tValue
}

// field returns the struct's field id, or nil.
func (v *tValue) field(id int16) *tValue {
	for k := range v.fields {
		if v.fields[k].id == id {
			return &v.fields[k].v
		}
	}
	return nil
}

// tReader reads compact-protocol values from b.
type tReader struct {
	b   []byte
	pos int
}

func (r *tReader) byte1() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, errThriftShort
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

func (r *tReader) uvarint() (uint64, error) {
	var x uint64
	for shift := 0; shift < 64; shift += 7 {
		c, err := r.byte1()
		if err != nil {
			return 0, err
		}
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x, nil
		}
	}
	return 0, errThriftBad
}

func (r *tReader) zigzag() (int64, error) {
	u, err := r.uvarint()
	return int64(u>>1) ^ -int64(u&1), err
}

func (r *tReader) bytesN(n uint64) ([]byte, error) {
	if n > uint64(len(r.b)-r.pos) {
		return nil, errThriftShort
	}
	s := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return s, nil
}

// size reads a collection size; each element takes at least one byte, so a size larger
// than what is left is malformed or short.
func (r *tReader) size(n uint64) (int, error) {
	if n > uint64(len(r.b)-r.pos) {
		return 0, errThriftShort
	}
	return int(n), nil
}

// readStruct reads a struct's fields up to its stop byte.
func (r *tReader) readStruct(depth int) (tValue, error) {
	v := tValue{typ: tStruct}
	if depth > thriftMaxDepth {
		return v, errThriftBad
	}
	var last int16
	for {
		h, err := r.byte1()
		if err != nil {
			return v, err
		}
		if h == 0 {
			return v, nil
		}
		typ := h & 0x0f
		id := last + int16(h>>4)
		if h>>4 == 0 {
			z, err := r.zigzag()
			if err != nil {
				return v, err
			}
			id = int16(z)
		}
		var x tValue
		if typ == tBoolTrue || typ == tBoolFalse {
			x = tValue{typ: tBoolTrue}
			if typ == tBoolTrue {
				x.i = 1
			}
		} else if x, err = r.readValue(typ, depth+1); err != nil {
			return v, err
		}
		v.fields = append(v.fields, tField{id: id, v: x})
		last = id
	}
}

// readValue reads a value of type typ (outside a struct's field header).
func (r *tReader) readValue(typ byte, depth int) (tValue, error) {
	v := tValue{typ: typ}
	var err error
	switch typ {
	case tBoolTrue, tBoolFalse:
		var c byte
		c, err = r.byte1()
		v.typ = tBoolTrue
		if c == tBoolTrue {
			v.i = 1
		}
	case tByte:
		var c byte
		c, err = r.byte1()
		v.i = int64(int8(c))
	case tI16, tI32, tI64:
		v.i, err = r.zigzag()
	case tDouble:
		v.b, err = r.bytesN(8)
	case tBinary:
		var n uint64
		if n, err = r.uvarint(); err == nil {
			v.b, err = r.bytesN(n)
		}
	case tList, tSet:
		return r.readList(typ, depth)
	case tMap:
		return r.readMap(depth)
	case tStruct:
		return r.readStruct(depth)
	default:
		err = fmt.Errorf("%w: type %d", errThriftBad, typ)
	}
	return v, err
}

// readList reads a list or set (typ): a header of the size and the elements' type, then
// the elements (on an error, those read so far).
func (r *tReader) readList(typ byte, depth int) (tValue, error) {
	v := tValue{typ: typ}
	if depth > thriftMaxDepth {
		return v, errThriftBad
	}
	h, err := r.byte1()
	if err != nil {
		return v, err
	}
	n := uint64(h >> 4)
	v.elem = h & 0x0f
	if n == 15 {
		if n, err = r.uvarint(); err != nil {
			return v, err
		}
	}
	k, err := r.size(n)
	if err != nil {
		return v, err
	}
	v.elems = make([]tValue, 0, k)
	for range k {
		x, err := r.readValue(v.elem, depth+1)
		if err != nil {
			return v, err
		}
		v.elems = append(v.elems, x)
	}
	return v, nil
}

// readMap reads a map: its size, then (unless it is empty) the keys' and values' types and
// the pairs (on an error, those read so far).
func (r *tReader) readMap(depth int) (tValue, error) {
	v := tValue{typ: tMap}
	if depth > thriftMaxDepth {
		return v, errThriftBad
	}
	n, err := r.uvarint()
	if err != nil || n == 0 {
		return v, err
	}
	kv, err := r.byte1()
	if err != nil {
		return v, err
	}
	v.key, v.val = kv>>4, kv&0x0f
	k, err := r.size(n)
	if err != nil {
		return v, err
	}
	for range k {
		key, err := r.readValue(v.key, depth+1)
		if err != nil {
			return v, err
		}
		val, err := r.readValue(v.val, depth+1)
		if err != nil {
			return v, err
		}
		v.keys, v.vals = append(v.keys, key), append(v.vals, val)
	}
	return v, nil
}

// readThriftStruct reads one struct from the start of b and returns it with its length.
func readThriftStruct(b []byte) (tValue, int, error) {
	r := tReader{b: b}
	v, err := r.readStruct(0)
	return v, r.pos, err
}

func appendUvarint(dst []byte, x uint64) []byte { return binary.AppendUvarint(dst, x) }

func appendZigzag(dst []byte, x int64) []byte {
	return appendUvarint(dst, uint64(x<<1)^uint64(x>>63))
}

// thriftOut appends a struct in Thrift's compact protocol: fields in increasing id order.
type thriftOut struct {
	b     []byte
	last  [4]int16 // the last field id of each open struct
	depth int
}

func (t *thriftOut) reset() { t.b, t.depth, t.last[0] = t.b[:0], 0, 0 }

func (t *thriftOut) field(id int16, typ byte) {
	if d := id - t.last[t.depth]; d > 0 && d <= 15 {
		t.b = append(t.b, byte(d)<<4|typ)
	} else {
		t.b = appendZigzag(append(t.b, typ), int64(id))
	}
	t.last[t.depth] = id
}

func (t *thriftOut) i32(id int16, v int32) {
	t.field(id, tI32)
	t.b = appendZigzag(t.b, int64(v))
}

func (t *thriftOut) boolean(id int16, v bool) {
	typ := byte(tBoolFalse)
	if v {
		typ = tBoolTrue
	}
	t.field(id, typ)
}

// begin opens a struct field; end closes it (or, at depth 0, the struct itself).
func (t *thriftOut) begin(id int16) {
	t.field(id, tStruct)
	t.depth++
	t.last[t.depth] = 0
}

func (t *thriftOut) end() {
	t.b = append(t.b, 0)
	if t.depth > 0 {
		t.depth--
	}
}
