// Package jsonappend writes JSON numbers and strings into byte slices without allocating:
// the one implementation shared by the sample files (envrunner/output) and the policy
// server's wire format.
package jsonappend

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// SmallInt bounds the integers that Float32 writes with strconv.AppendInt: the shortest
// 'g' form of a float32 switches to an exponent at 1e6, below it the two write the same digits.
const SmallInt = 1e6

// Float32 writes v as the shortest decimal that reads back as the same float32
// (strconv's 'g' format), with NaN, Infinity and -Infinity for the values JSON has no number
// for (Python's json module reads them).
func Float32(dst []byte, v float32) []byte {
	switch {
	case v != v:
		return append(dst, "NaN"...)
	case v > math.MaxFloat32:
		return append(dst, "Infinity"...)
	case v < -math.MaxFloat32:
		return append(dst, "-Infinity"...)
	}
	// Small integers (rewards of 1, one-hot and grid observations) are common, and AppendInt
	// writes them several times faster than the float formatter, with the same bytes. Negative
	// zero keeps its sign through AppendFloat ("-0").
	if v > -SmallInt && v < SmallInt {
		if i := int32(v); float32(i) == v && (i != 0 || !math.Signbit(float64(v))) {
			return strconv.AppendInt(dst, int64(i), 10)
		}
	}
	return appendShortest32(dst, v)
}

// Float32Real writes v as Float32 does, but always as a float: a whole number gets ".0"
// (1.0, -0.0), so that a reader that types numbers by their form (Python's json, pandas,
// Arrow) reads a float. Values of 1e6 and beyond are written with an exponent, which reads as
// a float already.
func Float32Real(dst []byte, v float32) []byte {
	if v > -SmallInt && v < SmallInt {
		if i := int32(v); float32(i) == v {
			if i == 0 && math.Signbit(float64(v)) {
				return append(dst, "-0.0"...)
			}
			dst = strconv.AppendInt(dst, int64(i), 10)
			return append(dst, '.', '0')
		}
	}
	return Float32(dst, v)
}

const hexDigits = "0123456789abcdef"

// String writes s as a JSON string. Control characters, quotes and backslashes are
// escaped, and so are U+2028 and U+2029; bytes that are not valid UTF-8 become \ufffd, so the
// result is valid JSON for any s.
func String(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Array appends the JSON array of v, each element written by add.
func Array[T any](dst []byte, v []T, add func([]byte, T) []byte) []byte {
	dst = append(dst, '[')
	for i, x := range v {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = add(dst, x)
	}
	return append(dst, ']')
}
