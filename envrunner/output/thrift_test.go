package output

import (
	"testing"
)

// appendStruct appends v (a struct) with its stop byte: the tests' writer of any struct read.
func appendStruct(dst []byte, v *tValue) []byte {
	var last int16
	for k := range v.fields {
		f := &v.fields[k]
		typ := f.v.typ
		if typ == tBoolTrue && f.v.i == 0 {
			typ = tBoolFalse
		}
		if d := f.id - last; d > 0 && d <= 15 {
			dst = append(dst, byte(d)<<4|typ)
		} else {
			dst = appendZigzag(append(dst, typ), int64(f.id))
		}
		last = f.id
		if typ != tBoolTrue && typ != tBoolFalse {
			dst = appendValue(dst, &f.v)
		}
	}
	return append(dst, 0)
}

// appendValue appends v's encoding outside a field header.
func appendValue(dst []byte, v *tValue) []byte {
	switch v.typ {
	case tBoolTrue, tBoolFalse:
		if v.i != 0 {
			return append(dst, tBoolTrue)
		}
		return append(dst, tBoolFalse)
	case tByte:
		return append(dst, byte(v.i))
	case tI16, tI32, tI64:
		return appendZigzag(dst, v.i)
	case tDouble:
		return append(dst, v.b...)
	case tBinary:
		return append(appendUvarint(dst, uint64(len(v.b))), v.b...)
	case tList, tSet:
		if n := len(v.elems); n < 15 {
			dst = append(dst, byte(n)<<4|v.elem)
		} else {
			dst = appendUvarint(append(dst, 0xf0|v.elem), uint64(n))
		}
		for k := range v.elems {
			dst = appendValue(dst, &v.elems[k])
		}
		return dst
	case tMap:
		dst = appendUvarint(dst, uint64(len(v.keys)))
		if len(v.keys) == 0 {
			return dst
		}
		dst = append(dst, v.key<<4|v.val)
		for k := range v.keys {
			dst = appendValue(appendValue(dst, &v.keys[k]), &v.vals[k])
		}
		return dst
	case tStruct:
		return appendStruct(dst, v)
	}
	return dst
}

// TestThriftOut: page headers as the writer encodes them read back as written: short and
// long field headers, nested structs, booleans, negative values.
func TestThriftOut(t *testing.T) {
	var h thriftOut
	for range 2 { // the second time after reset
		h.reset()
		h.i32(1, 3)
		h.i32(2, -7)
		h.i32(4, -2147483648)
		h.begin(8)
		h.i32(1, 2147483647)
		h.boolean(7, true)
		h.boolean(30, false) // a delta above 15: the long form
		h.end()
		h.i32(40, 5)
		h.end()
		v, n, err := readThriftStruct(h.b)
		if err != nil || n != len(h.b) {
			t.Fatalf("read %d of %d bytes: %v", n, len(h.b), err)
		}
		for _, f := range []struct {
			id   int16
			want int64
		}{{1, 3}, {2, -7}, {4, -2147483648}, {40, 5}} {
			if g := v.field(f.id); g == nil || g.i != f.want {
				t.Fatalf("field %d = %+v, want %d", f.id, g, f.want)
			}
		}
		s := v.field(8)
		if s == nil || s.typ != tStruct {
			t.Fatalf("field 8 = %+v, want a struct", s)
		}
		if g := s.field(1); g == nil || g.i != 2147483647 {
			t.Fatalf("field 8.1 = %+v", g)
		}
		if g := s.field(7); g == nil || g.i != 1 {
			t.Fatalf("field 8.7 = %+v, want true", g)
		}
		if g := s.field(30); g == nil || g.i != 0 {
			t.Fatalf("field 8.30 = %+v, want false", g)
		}
	}
}
