package wire

import (
	"math"
	"strconv"

	"github.com/onnxrl/sampler/internal/jsonappend"
	"github.com/onnxrl/sampler/spaces"
)

// AppendFloat32 appends v in its shortest form that reads back to the same float32; NaN and
// infinities as NaN, Infinity and -Infinity (which Python's json module reads).
func AppendFloat32(dst []byte, v float32) []byte { return jsonappend.Float32(dst, v) }

// AppendFloat64 appends v as AppendFloat32 does, in float64 precision.
func AppendFloat64(dst []byte, v float64) []byte {
	switch {
	case v != v:
		return append(dst, "NaN"...)
	case math.IsInf(v, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(v, -1):
		return append(dst, "-Infinity"...)
	}
	return strconv.AppendFloat(dst, v, 'g', -1, 64)
}

// AppendFloats appends v as a flat JSON array.
func AppendFloats(dst []byte, v []float32) []byte {
	return jsonappend.Array(dst, v, AppendFloat32)
}

func appendInt(dst []byte, v float32) []byte {
	if v != v || math.IsInf(float64(v), 0) || v != float32(math.Trunc(float64(v))) {
		return AppendFloat32(dst, v) // not an element of the space; written as it is
	}
	return strconv.AppendInt(dst, int64(v), 10)
}

// AppendValue appends the JSON form of raw, a value of space s in its raw layout (see package
// spaces): a Discrete as an integer, a MultiDiscrete or MultiBinary as an array of integers, a
// Box as arrays nested by its shape (a number for a scalar Box), a Tuple as an array of its
// children, a Dict as an object of its children in key order. raw must have s.Size() values.
func AppendValue(dst []byte, s spaces.Space, raw []float32) []byte {
	dst, _ = appendValue(dst, s, raw)
	return dst
}

// appendValue writes the value of s at the start of raw and returns the rest of raw.
func appendValue(dst []byte, s spaces.Space, raw []float32) ([]byte, []float32) {
	switch s := s.(type) {
	case *spaces.Discrete:
		return appendInt(dst, raw[0]), raw[1:]
	case *spaces.MultiDiscrete, *spaces.MultiBinary:
		n := s.Size()
		dst = append(dst, '[')
		for i, v := range raw[:n] {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendInt(dst, v)
		}
		return append(dst, ']'), raw[n:]
	case *spaces.Box:
		n := s.Size()
		return appendBox(dst, s.Shape, raw[:n]), raw[n:]
	case *spaces.Tuple:
		dst = append(dst, '[')
		for i, c := range s.Spaces {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst, raw = appendValue(dst, c, raw)
		}
		return append(dst, ']'), raw
	case *spaces.Dict:
		dst = append(dst, '{')
		for i, c := range s.Spaces {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, s.Keys[i])
			dst = append(dst, ':')
			dst, raw = appendValue(dst, c, raw)
		}
		return append(dst, '}'), raw
	}
	// An unknown kind of space: its raw layout.
	n := s.Size()
	return AppendFloats(dst, raw[:n]), raw[n:]
}

// appendBox writes raw (row-major) as arrays nested by shape.
func appendBox(dst []byte, shape []int, raw []float32) []byte {
	if len(shape) == 0 {
		return AppendFloat32(dst, raw[0])
	}
	if len(shape) == 1 {
		return AppendFloats(dst, raw)
	}
	inner := len(raw) / max(shape[0], 1)
	dst = append(dst, '[')
	for i := range shape[0] {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendBox(dst, shape[1:], raw[i*inner:(i+1)*inner])
	}
	return append(dst, ']')
}

// AppendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func AppendString(dst []byte, s string) []byte { return jsonappend.String(dst, s) }
