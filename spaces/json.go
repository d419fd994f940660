package spaces

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/onnxrl/sampler/internal/jsonappend"
)

// MarshalJSON writes {"type":"Box","low":..,"high":..,"shape":[..],"dtype":".."}: low and
// high as a scalar when all their elements are equal, else as flat arrays in row-major
// order; infinities as "inf" and "-inf". It fails on an invalid box.
func (b *Box) MarshalJSON() ([]byte, error) { return marshal(b, "Box") }

// MarshalJSON writes {"type":"Discrete","n":..,"start":..}.
func (d *Discrete) MarshalJSON() ([]byte, error) { return marshal(d, "Discrete") }

// MarshalJSON writes {"type":"MultiDiscrete","nvec":[..]}.
func (m *MultiDiscrete) MarshalJSON() ([]byte, error) { return marshal(m, "MultiDiscrete") }

// MarshalJSON writes {"type":"MultiBinary","n":..}.
func (m *MultiBinary) MarshalJSON() ([]byte, error) { return marshal(m, "MultiBinary") }

// MarshalJSON writes {"type":"Dict","spaces":{"key":{..},..}} in key order.
func (d *Dict) MarshalJSON() ([]byte, error) { return marshal(d, "Dict") }

// MarshalJSON writes {"type":"Tuple","spaces":[{..},..]}.
func (t *Tuple) MarshalJSON() ([]byte, error) { return marshal(t, "Tuple") }

func marshal(s Space, path string) ([]byte, error) {
	if _, _, err := validate(s, path, 0); err != nil {
		return nil, err
	}
	return appendJSON(nil, s)
}

// appendJSON appends the JSON form of the valid space s.
func appendJSON(dst []byte, s Space) ([]byte, error) {
	switch s := s.(type) {
	case *Box:
		dst = append(dst, `{"type":"Box","low":`...)
		dst = appendBound(dst, s.Low)
		dst = append(dst, `,"high":`...)
		dst = appendBound(dst, s.High)
		dst = append(dst, `,"shape":[`...)
		for i, d := range s.Shape {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, int64(d), 10)
		}
		dst = append(dst, `],"dtype":"`...)
		dst = append(dst, dtypeOrDefault(s.Dtype)...)
		return append(dst, `"}`...), nil
	case *Discrete:
		dst = append(dst, `{"type":"Discrete","n":`...)
		dst = strconv.AppendInt(dst, s.N, 10)
		dst = append(dst, `,"start":`...)
		dst = strconv.AppendInt(dst, s.Start, 10)
		return append(dst, '}'), nil
	case *MultiDiscrete:
		dst = append(dst, `{"type":"MultiDiscrete","nvec":[`...)
		for i, k := range s.Nvec {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, k, 10)
		}
		return append(dst, "]}"...), nil
	case *MultiBinary:
		dst = append(dst, `{"type":"MultiBinary","n":`...)
		dst = strconv.AppendInt(dst, int64(s.N), 10)
		return append(dst, '}'), nil
	case *Dict:
		dst = append(dst, `{"type":"Dict","spaces":{`...)
		for i, c := range s.Spaces {
			if i > 0 {
				dst = append(dst, ',')
			}
			k, err := json.Marshal(s.Keys[i])
			if err != nil {
				return nil, err
			}
			dst = append(dst, k...)
			dst = append(dst, ':')
			if dst, err = appendJSON(dst, c); err != nil {
				return nil, err
			}
		}
		return append(dst, "}}"...), nil
	case *Tuple:
		dst = append(dst, `{"type":"Tuple","spaces":[`...)
		for i, c := range s.Spaces {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendJSON(dst, c); err != nil {
				return nil, err
			}
		}
		return append(dst, "]}"...), nil
	}
	b, err := s.MarshalJSON()
	return append(dst, b...), err
}

func appendBound(dst []byte, v []float32) []byte {
	if allEqual(v) {
		return appendFloat(dst, v[0])
	}
	return jsonappend.Array(dst, v, appendFloat)
}

func appendFloat(dst []byte, v float32) []byte {
	switch {
	case math.IsInf(float64(v), 1):
		return append(dst, `"inf"`...)
	case math.IsInf(float64(v), -1):
		return append(dst, `"-inf"`...)
	}
	return strconv.AppendFloat(dst, float64(v), 'g', -1, 32)
}

// Unmarshal decodes a space from its JSON form (gymnasium names and fields):
//
//	{"type":"Box","low":-1.0,"high":1.0,"shape":[3],"dtype":"float32"}
//	{"type":"Discrete","n":2,"start":0}
//	{"type":"MultiDiscrete","nvec":[3,4]}
//	{"type":"MultiBinary","n":5}
//	{"type":"Dict","spaces":{"a":{...},"b":{...}}}
//	{"type":"Tuple","spaces":[{...},{...}]}
//
// Box low and high are each a number, one of the strings "inf", "+inf", "-inf",
// "Infinity", "+Infinity", "-Infinity" (any case), or an array nested like the shape (or
// flat, with prod(shape) elements). When shape is left out it is inferred from the arrays'
// nesting, and is () (a scalar box) when both bounds are scalars. dtype defaults to
// "float32"; Discrete start defaults to 0; Discrete, MultiDiscrete and MultiBinary accept
// and ignore a "dtype" field. Other unknown fields, duplicate keys, and an invalid space are
// errors. The result is valid (Validate returns nil).
//
// Errors are *FieldError values naming the offending field, e.g.
// `spaces: Dict.spaces["pos"].shape[1]: must be positive, got -2`. Unmarshal never panics.
func Unmarshal(data []byte) (Space, error) {
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, &FieldError{Msg: "invalid JSON: " + err.Error(), Err: err}
	}
	s, err := decode(raw, "", 0)
	if err != nil {
		return nil, err
	}
	if _, _, err := validate(s, s.Type(), 0); err != nil {
		return nil, err
	}
	return s, nil
}

type field struct {
	key string
	val json.RawMessage
}

// parseObject splits a JSON object into its fields, in order, rejecting duplicate keys.
// raw is known to be valid JSON.
func parseObject(raw json.RawMessage, path string) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if d, ok := tok.(json.Delim); err != nil || !ok || d != '{' {
		return nil, fieldErr(path, "must be an object, got %s", excerpt(raw))
	}
	var fields []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fieldErr(path, "invalid JSON: %v", err)
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fieldErr(path, "invalid JSON: %v", err)
		}
		fields = append(fields, field{key, v})
	}
	return fields, nil
}

// duplicate returns an error for the first key that appears twice in fields.
func duplicate(fields []field, path string) error {
	seen := make(map[string]bool, len(fields))
	for _, f := range fields {
		if seen[f.key] {
			return fieldErr(path, "duplicate key %q", f.key)
		}
		seen[f.key] = true
	}
	return nil
}

func lookup(fields []field, key string) (json.RawMessage, bool) {
	for _, f := range fields {
		if f.key == key {
			return f.val, true
		}
	}
	return nil, false
}

// excerpt shows a raw JSON value in an error message.
func excerpt(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

var allowedFields = map[string][]string{
	"Box":           {"type", "low", "high", "shape", "dtype"},
	"Discrete":      {"type", "n", "start", "dtype"},
	"MultiDiscrete": {"type", "nvec", "dtype"},
	"MultiBinary":   {"type", "n", "dtype"},
	"Dict":          {"type", "spaces"},
	"Tuple":         {"type", "spaces"},
}

// decode decodes one space; path is the field path of this space ("" at the root, where
// the path becomes the type's name).
func decode(raw json.RawMessage, path string, depth int) (Space, error) {
	typ, fields, path, err := decodeHeader(raw, path, depth)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "Box":
		return decodeBox(fields, path)
	case "Discrete":
		return decodeDiscrete(fields, path)
	case "MultiDiscrete":
		return decodeMultiDiscrete(fields, path)
	case "MultiBinary":
		return decodeMultiBinary(fields, path)
	case "Dict":
		return decodeDict(fields, path, depth)
	default: // Tuple
		return decodeTuple(fields, path, depth)
	}
}

// decodeHeader parses a space's object and returns its type, its fields (each known for
// the type, none twice) and its path (at: path, or the type's name at the root).
func decodeHeader(raw json.RawMessage, path string, depth int) (typ string, fields []field, at string, err error) {
	if depth > MaxDepth {
		return "", nil, "", fieldErr(path, "nesting deeper than %d levels", MaxDepth)
	}
	if fields, err = parseObject(raw, path); err != nil {
		return "", nil, "", err
	}
	traw, ok := lookup(fields, "type")
	if !ok {
		return "", nil, "", fieldErr(join(path, "type"), "required field missing")
	}
	if err := json.Unmarshal(traw, &typ); err != nil {
		return "", nil, "", fieldErr(join(path, "type"), "must be a string, got %s", excerpt(traw))
	}
	allowed, ok := allowedFields[typ]
	if !ok {
		return "", nil, "", fieldErr(join(path, "type"), "unknown space type %q (want Box, Discrete, MultiDiscrete, MultiBinary, Dict or Tuple)", typ)
	}
	if path == "" {
		path = typ
	}
	if err := duplicate(fields, path); err != nil {
		return "", nil, "", err
	}
	for _, f := range fields {
		if !slices.Contains(allowed, f.key) {
			return "", nil, "", fieldErr(join(path, f.key), "unknown field for %s", typ)
		}
	}
	if (typ == "Dict" || typ == "Tuple") && depth >= MaxDepth {
		return "", nil, "", fieldErr(path, "nesting deeper than %d levels", MaxDepth)
	}
	return typ, fields, path, nil
}

// required returns the field key of a space at path, or the error that names it missing.
func required(fields []field, path, key string) (json.RawMessage, error) {
	v, ok := lookup(fields, key)
	if !ok {
		return nil, fieldErr(join(path, key), "required field missing")
	}
	return v, nil
}

func decodeDiscrete(fields []field, path string) (Space, error) {
	nraw, err := required(fields, path, "n")
	if err != nil {
		return nil, err
	}
	d := &Discrete{}
	if d.N, err = parseInt(nraw, join(path, "n")); err != nil {
		return nil, err
	}
	if sraw, ok := lookup(fields, "start"); ok {
		if d.Start, err = parseInt(sraw, join(path, "start")); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func decodeMultiDiscrete(fields []field, path string) (Space, error) {
	nraw, err := required(fields, path, "nvec")
	if err != nil {
		return nil, err
	}
	nvec, err := parseInts(nraw, join(path, "nvec"))
	if err != nil {
		return nil, err
	}
	return &MultiDiscrete{Nvec: nvec}, nil
}

func decodeMultiBinary(fields []field, path string) (Space, error) {
	nraw, err := required(fields, path, "n")
	if err != nil {
		return nil, err
	}
	n, err := parseInt(nraw, join(path, "n"))
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, fieldErr(join(path, "n"), "must be positive, got %d", n)
	}
	if n > MaxElements {
		return nil, fieldErr(join(path, "n"), "%d exceeds the limit of %d", n, MaxElements)
	}
	return &MultiBinary{N: int(n)}, nil
}

func decodeDict(fields []field, path string, depth int) (Space, error) {
	sraw, err := required(fields, path, "spaces")
	if err != nil {
		return nil, err
	}
	sp := join(path, "spaces")
	children, err := parseObject(sraw, sp)
	if err != nil {
		return nil, err
	}
	if err := duplicate(children, sp); err != nil {
		return nil, err
	}
	m := make(map[string]Space, len(children))
	for _, c := range children {
		s, err := decode(c.val, sp+"["+strconv.Quote(c.key)+"]", depth+1)
		if err != nil {
			return nil, err
		}
		m[c.key] = s
	}
	return NewDict(m), nil
}

func decodeTuple(fields []field, path string, depth int) (Space, error) {
	sraw, err := required(fields, path, "spaces")
	if err != nil {
		return nil, err
	}
	sp := join(path, "spaces")
	var children []json.RawMessage
	if err := json.Unmarshal(sraw, &children); err != nil || children == nil {
		return nil, fieldErr(sp, "must be an array, got %s", excerpt(sraw))
	}
	t := &Tuple{Spaces: make([]Space, 0, len(children))}
	for i, c := range children {
		s, err := decode(c, sp+"["+strconv.Itoa(i)+"]", depth+1)
		if err != nil {
			return nil, err
		}
		t.Spaces = append(t.Spaces, s)
	}
	return t, nil
}

func decodeBox(fields []field, path string) (Space, error) {
	b := &Box{Dtype: "float32"}
	if raw, ok := lookup(fields, "dtype"); ok {
		if err := json.Unmarshal(raw, &b.Dtype); err != nil {
			return nil, fieldErr(join(path, "dtype"), "must be a string, got %s", excerpt(raw))
		}
		if b.Dtype == "" || !knownDtype(b.Dtype) {
			return nil, fieldErr(join(path, "dtype"), "unknown dtype %q", b.Dtype)
		}
	}
	shapeRaw, haveShape := lookup(fields, "shape")
	var shape []int
	if haveShape {
		var err error
		if shape, err = decodeBoxShape(shapeRaw, join(path, "shape")); err != nil {
			return nil, err
		}
	}
	var bs [2]boxBound
	for i, name := range [2]string{"low", "high"} {
		raw, ok := lookup(fields, name)
		if !ok {
			return nil, fieldErr(join(path, name), "required field missing")
		}
		vals, bshape, scalar, err := parseBound(raw, join(path, name))
		if err != nil {
			return nil, err
		}
		bs[i] = boxBound{vals, bshape, scalar}
	}
	if !haveShape {
		var err error
		if shape, err = impliedShape(bs, join(path, "high")); err != nil {
			return nil, err
		}
	}
	n, err := checkShape(shape, join(path, "shape"))
	if err != nil {
		return nil, err
	}
	b.Shape = shape
	if b.Low, err = bs[0].expand(shape, n, join(path, "low")); err != nil {
		return nil, err
	}
	if b.High, err = bs[1].expand(shape, n, join(path, "high")); err != nil {
		return nil, err
	}
	return b, nil
}

// decodeBoxShape parses a Box's "shape": positive dimensions whose product is within
// MaxElements.
func decodeBoxShape(raw json.RawMessage, path string) ([]int, error) {
	dims, err := parseInts(raw, path)
	if err != nil {
		return nil, err
	}
	shape := make([]int, len(dims))
	for i, d := range dims {
		if d <= 0 {
			return nil, fieldErr(path+"["+strconv.Itoa(i)+"]", "must be positive, got %d", d)
		}
		shape[i] = int(min(d, MaxElements+1)) // too large: reported by checkShape below
	}
	if _, err := checkShape(shape, path); err != nil {
		return nil, err
	}
	return shape, nil
}

// boxBound is a parsed Box bound (parseBound): its values, flat, with their shape, or one
// scalar.
type boxBound struct {
	vals   []float32
	shape  []int
	scalar bool
}

// impliedShape is a Box's shape when it gives none: that of its array bounds, which must
// agree, or [] when both are scalars. highPath names the field reported on a mismatch.
func impliedShape(bs [2]boxBound, highPath string) ([]int, error) {
	switch {
	case bs[0].scalar && bs[1].scalar:
		return []int{}, nil
	case bs[0].scalar:
		return bs[1].shape, nil
	case bs[1].scalar:
		return bs[0].shape, nil
	case !slices.Equal(bs[0].shape, bs[1].shape):
		return nil, fieldErr(highPath, "shape %s does not match low's shape %s", shapeString(bs[1].shape), shapeString(bs[0].shape))
	}
	return bs[0].shape, nil
}

// expand gives the bound's n values for a Box of the given shape: a scalar repeated, or the
// array's own values when its shape is the Box's (or it is flat with n values).
func (bd boxBound) expand(shape []int, n int, path string) ([]float32, error) {
	switch {
	case bd.scalar:
		vals := make([]float32, n)
		for j := range vals {
			vals[j] = bd.vals[0]
		}
		return vals, nil
	case slices.Equal(bd.shape, shape) || (len(bd.shape) == 1 && len(bd.vals) == n):
		return bd.vals, nil
	}
	return nil, fieldErr(path, "array of shape %s does not match shape %s", shapeString(bd.shape), shapeString(shape))
}

// parseBound parses a Box bound: a number, an infinity string, or a rectangular nested
// array, returned flat in row-major order with its shape.
func parseBound(raw json.RawMessage, path string) (vals []float32, shape []int, scalar bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, nil, false, fieldErr(path, "invalid JSON: %v", err)
	}
	if _, ok := v.([]any); !ok {
		f, err := boundValue(v, path)
		if err != nil {
			return nil, nil, false, err
		}
		return []float32{f}, nil, true, nil
	}
	// The shape follows the first element at every level; walk checks the rest against it.
	for x := v; ; {
		a, ok := x.([]any)
		if !ok {
			break
		}
		if len(a) == 0 {
			return nil, nil, false, fieldErr(path, "must not contain an empty array")
		}
		if len(shape) == MaxDepth {
			return nil, nil, false, fieldErr(path, "more than %d dimensions", MaxDepth)
		}
		shape = append(shape, len(a))
		x = a[0]
	}
	if _, err := checkShape(shape, path); err != nil {
		return nil, nil, false, err
	}
	var walk func(x any, dim int, p string) error
	walk = func(x any, dim int, p string) error {
		a, isArr := x.([]any)
		if dim == len(shape) {
			if isArr {
				return fieldErr(p, "array is not rectangular: want a number here")
			}
			f, err := boundValue(x, p)
			if err != nil {
				return err
			}
			vals = append(vals, f)
			return nil
		}
		if !isArr {
			return fieldErr(p, "array is not rectangular: want an array of %d here", shape[dim])
		}
		if len(a) != shape[dim] {
			return fieldErr(p, "array is not rectangular: %d elements, want %d", len(a), shape[dim])
		}
		for i, y := range a {
			if err := walk(y, dim+1, p+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(v, 0, path); err != nil {
		return nil, nil, false, err
	}
	return vals, shape, false, nil
}

func boundValue(v any, path string) (float32, error) {
	switch v := v.(type) {
	case json.Number:
		// Rounded once, straight to float32, so that MarshalJSON's shortest form round-trips.
		f, err := strconv.ParseFloat(string(v), 32)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, fieldErr(path, "invalid number %s", v)
		}
		return float32(f), nil // beyond float32's range: +-Inf, as numpy's cast
	case string:
		switch strings.ToLower(v) {
		case "inf", "+inf", "infinity", "+infinity":
			return float32(math.Inf(1)), nil
		case "-inf", "-infinity":
			return float32(math.Inf(-1)), nil
		}
		return 0, fieldErr(path, "must be a number or an infinity (\"inf\", \"-inf\"), got %q", v)
	case nil:
		return 0, fieldErr(path, "must be a number or an array, got null")
	case bool:
		return 0, fieldErr(path, "must be a number or an array, got %v", v)
	}
	return 0, fieldErr(path, "must be a number or an array, got an object")
}

// parseInt parses an integer field; integral floats such as 2.0 are accepted.
func parseInt(raw json.RawMessage, path string) (int64, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return 0, fieldErr(path, "invalid JSON: %v", err)
	}
	return intValue(v, path, raw)
}

func intValue(v any, path string, raw json.RawMessage) (int64, error) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, fieldErr(path, "must be an integer, got %s", excerpt(raw))
	}
	if i, err := strconv.ParseInt(string(num), 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, fieldErr(path, "must be an integer, got %s", num)
	}
	return int64(f), nil
}

// parseInts parses a flat array of integers.
func parseInts(raw json.RawMessage, path string) ([]int64, error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil || elems == nil {
		return nil, fieldErr(path, "must be an array of integers, got %s", excerpt(raw))
	}
	out := make([]int64, len(elems))
	for i, e := range elems {
		v, err := parseInt(e, path+"["+strconv.Itoa(i)+"]")
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
