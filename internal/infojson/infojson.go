// Package infojson writes and reads the infos column of the sample files: each row's
// env.Info as one JSON object, the same bytes for the same info (keys sorted), so that a
// seeded run still gives byte-identical files. Floats are written as the columns write them
// (shortest form, NaN and ±Infinity as Python's json reads them); values the writer does not
// know are written by encoding/json, or as their %v string when it cannot. Reading gives
// int64 for integers, float64 for other numbers, string, bool, nil, []any and map[string]any.
package infojson

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/internal/jsonappend"
	"github.com/onnxrl/sampler/internal/jsonscan"
)

// Append appends info as a JSON object to dst ({} for a nil or empty info).
func Append(dst []byte, info env.Info) []byte {
	return appendObject(dst, info, 0)
}

// maxDepth bounds the nesting written (deeper values are written as their %v string).
const maxDepth = 64

func appendObject(dst []byte, m map[string]any, depth int) []byte {
	if len(m) == 0 {
		return append(dst, '{', '}')
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonappend.String(dst, k)
		dst = append(dst, ':')
		dst = appendValue(dst, m[k], depth+1)
	}
	return append(dst, '}')
}

func appendFloat(dst []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(dst, "NaN"...)
	case math.IsInf(v, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(v, -1):
		return append(dst, "-Infinity"...)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, v, 'g', -1, 64)
	for _, c := range dst[start:] {
		if c == '.' || c == 'e' {
			return dst
		}
	}
	return append(dst, '.', '0') // a whole float keeps a point, so it reads back as a float
}

func appendValue(dst []byte, v any, depth int) []byte {
	if depth > maxDepth {
		return jsonappend.String(dst, fmt.Sprint(v))
	}
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, v)
	case string:
		return jsonappend.String(dst, v)
	case float32:
		return jsonappend.Float32Real(dst, v)
	case float64:
		return appendFloat(dst, v)
	case env.Info:
		return appendObject(dst, v, depth)
	case map[string]any:
		return appendObject(dst, v, depth)
	case []any:
		return appendValues(dst, v, depth+1)
	case []float32:
		return jsonappend.Array(dst, v, jsonappend.Float32Real)
	case []float64:
		return jsonappend.Array(dst, v, appendFloat)
	}
	if out, ok := appendInteger(dst, v); ok {
		return out
	}
	if b, err := json.Marshal(v); err == nil {
		return append(dst, b...)
	}
	return jsonappend.String(dst, fmt.Sprint(v))
}

// appendValues appends the JSON array of v, its elements at depth.
func appendValues(dst []byte, v []any, depth int) []byte {
	dst = append(dst, '[')
	for i, x := range v {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendValue(dst, x, depth)
	}
	return append(dst, ']')
}

// appendInteger appends v when it is one of Go's integer types; ok is false otherwise.
func appendInteger(dst []byte, v any) (_ []byte, ok bool) {
	switch v := v.(type) {
	case int:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int8:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int16:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int64:
		return strconv.AppendInt(dst, v, 10), true
	case uint:
		return strconv.AppendUint(dst, uint64(v), 10), true
	case uint8:
		return strconv.AppendUint(dst, uint64(v), 10), true
	case uint16:
		return strconv.AppendUint(dst, uint64(v), 10), true
	case uint32:
		return strconv.AppendUint(dst, uint64(v), 10), true
	case uint64:
		return strconv.AppendUint(dst, v, 10), true
	}
	return dst, false
}

// Decode reads one info object; {} (and null) give nil.
func Decode(data []byte) (env.Info, error) {
	var s jsonscan.Scanner
	s.Reset(data)
	s.Input = "info"
	info, err := Read(&s)
	if err != nil {
		return nil, err
	}
	if err := s.End(); err != nil {
		return nil, err
	}
	return info, nil
}

// Read reads one info object with s, which is at it: {} and null give nil.
func Read(s *jsonscan.Scanner) (env.Info, error) {
	if s.Null() {
		return nil, nil
	}
	v, err := readObject(s, 0)
	if err != nil || len(v) == 0 {
		return nil, err
	}
	return env.Info(v), nil
}

func readObject(s *jsonscan.Scanner, depth int) (map[string]any, error) {
	var m map[string]any
	err := s.ObjectDepth(depth, func(k []byte) error {
		key := string(k)
		if _, dup := m[key]; dup {
			return s.Errorf("duplicate key %q", key)
		}
		v, err := readValue(s, depth+1)
		if m == nil {
			m = map[string]any{}
		}
		m[key] = v
		return err
	})
	return m, err
}

func readValue(s *jsonscan.Scanner, depth int) (any, error) {
	if depth > jsonscan.MaxDepth {
		return nil, s.Errorf("nested deeper than %d", jsonscan.MaxDepth)
	}
	switch s.Peek() {
	case '{':
		m, err := readObject(s, depth)
		if m == nil && err == nil {
			m = map[string]any{}
		}
		return m, err
	case '[':
		list := []any{}
		err := s.Array(func(int) error {
			v, err := readValue(s, depth+1)
			list = append(list, v)
			return err
		})
		return list, err
	case '"':
		b, err := s.String()
		return string(b), err
	case 't', 'f':
		return s.Bool()
	case 'n':
		if s.Null() {
			return nil, nil
		}
		return nil, s.Unexpected("a value")
	}
	at := s.Offset()
	tok, isInt, err := s.Number()
	if err != nil {
		return nil, err
	}
	if isInt {
		if i, err := strconv.ParseInt(string(tok), 10, 64); err == nil {
			return i, nil
		}
	}
	var sub jsonscan.Scanner
	sub.Reset(tok)
	f, err := sub.Float64()
	if err != nil {
		return nil, s.ErrorAt(at, "%v", err)
	}
	return f, nil
}
