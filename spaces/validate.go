package spaces

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// FieldError is the error returned by Validate and Unmarshal. Path names the offending
// field, starting at the outermost space's type, e.g. `Dict.spaces["pos"].shape[1]`
// (just `type` when the outermost type is missing or unknown).
type FieldError struct {
	Path string
	Msg  string
	Err  error // underlying error (a JSON syntax error), or nil
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return "spaces: " + e.Msg
	}
	return "spaces: " + e.Path + ": " + e.Msg
}

func (e *FieldError) Unwrap() error { return e.Err }

func fieldErr(path, format string, args ...any) *FieldError {
	return &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	if strings.HasPrefix(field, "[") {
		return path + field
	}
	return path + "." + field
}

// badLen panics on a buffer of the wrong length: a programmer error.
//
//go:noinline
func badLen(op, arg string, got, want int) {
	panic(fmt.Sprintf("spaces: %s: len(%s) = %d, want %d", op, arg, got, want))
}

// Validate checks that the box is possible: a known dtype, positive dimensions, bounds of
// length prod(Shape) that are not NaN with low <= high, and for integer dtypes integral
// finite bounds within the dtype's range.
func (b *Box) Validate() error { _, _, err := validate(b, "Box", 0); return err }

// Validate checks that N > 0 and that every value fits the float32 raw layout exactly.
func (d *Discrete) Validate() error { _, _, err := validate(d, "Discrete", 0); return err }

// Validate checks that Nvec is not empty and its entries are positive.
func (m *MultiDiscrete) Validate() error { _, _, err := validate(m, "MultiDiscrete", 0); return err }

// Validate checks that N > 0.
func (m *MultiBinary) Validate() error { _, _, err := validate(m, "MultiBinary", 0); return err }

// Validate checks the keys (sorted, unique, valid UTF-8, one per space) and every child.
func (d *Dict) Validate() error { _, _, err := validate(d, "Dict", 0); return err }

// Validate checks every child.
func (t *Tuple) Validate() error { _, _, err := validate(t, "Tuple", 0); return err }

// validate checks s and returns its Size and FlatDim, each at most MaxElements.
func validate(s Space, path string, depth int) (size, flat int, err error) {
	if isNilSpace(s) {
		return 0, 0, fieldErr(path, "nil space")
	}
	switch s := s.(type) {
	case *Box:
		return validateBox(s, path)
	case *Discrete:
		return validateDiscrete(s, path)
	case *MultiDiscrete:
		return validateMultiDiscrete(s, path)
	case *MultiBinary:
		return validateMultiBinary(s, path)
	case *Dict:
		return validateDict(s, path, depth)
	case *Tuple:
		return validateChildren(s.Spaces, path, depth, func(i int) string { return strconv.Itoa(i) })
	default:
		// A Space implemented outside this package validates itself.
		if err := s.Validate(); err != nil {
			return 0, 0, err
		}
		size, flat = s.Size(), s.FlatDim()
		if size < 0 || flat < 0 || size > MaxElements || flat > MaxElements {
			return 0, 0, fieldErr(path, "size exceeds the limit of %d", MaxElements)
		}
		return size, flat, nil
	}
}

// isNilSpace reports whether s is nil or a nil pointer to one of this package's spaces.
func isNilSpace(s Space) bool {
	switch s := s.(type) {
	case nil:
		return true
	case *Box:
		return s == nil
	case *Discrete:
		return s == nil
	case *MultiDiscrete:
		return s == nil
	case *MultiBinary:
		return s == nil
	case *Dict:
		return s == nil
	case *Tuple:
		return s == nil
	}
	return false
}

func validateDiscrete(d *Discrete, path string) (size, flat int, err error) {
	if d.N <= 0 {
		return 0, 0, fieldErr(join(path, "n"), "must be positive, got %d", d.N)
	}
	if d.N > MaxElements {
		return 0, 0, fieldErr(join(path, "n"), "%d exceeds the limit of %d", d.N, MaxElements)
	}
	if d.Start < -MaxElements || d.Start > MaxElements-d.N+1 {
		return 0, 0, fieldErr(join(path, "start"), "%d puts values outside [-%d, %d] (not exact in float32)", d.Start, MaxElements, MaxElements)
	}
	return 1, int(d.N), nil
}

func validateMultiDiscrete(m *MultiDiscrete, path string) (size, flat int, err error) {
	if len(m.Nvec) == 0 {
		return 0, 0, fieldErr(join(path, "nvec"), "must not be empty")
	}
	if len(m.Nvec) > MaxElements {
		return 0, 0, fieldErr(join(path, "nvec"), "%d entries exceed the limit of %d", len(m.Nvec), MaxElements)
	}
	for i, k := range m.Nvec {
		p := join(path, "nvec["+strconv.Itoa(i)+"]")
		if k <= 0 {
			return 0, 0, fieldErr(p, "must be positive, got %d", k)
		}
		if k > MaxElements {
			return 0, 0, fieldErr(p, "%d exceeds the limit of %d", k, MaxElements)
		}
		flat += int(k)
		if flat > MaxElements {
			return 0, 0, fieldErr(join(path, "nvec"), "flat dimension exceeds the limit of %d", MaxElements)
		}
	}
	return len(m.Nvec), flat, nil
}

func validateMultiBinary(m *MultiBinary, path string) (size, flat int, err error) {
	if m.N <= 0 {
		return 0, 0, fieldErr(join(path, "n"), "must be positive, got %d", m.N)
	}
	if m.N > MaxElements {
		return 0, 0, fieldErr(join(path, "n"), "%d exceeds the limit of %d", m.N, MaxElements)
	}
	return m.N, m.N, nil
}

func validateDict(d *Dict, path string, depth int) (size, flat int, err error) {
	if depth >= MaxDepth {
		return 0, 0, fieldErr(path, "nesting deeper than %d levels", MaxDepth)
	}
	if len(d.Keys) != len(d.Spaces) {
		return 0, 0, fieldErr(join(path, "keys"), "%d keys for %d spaces", len(d.Keys), len(d.Spaces))
	}
	for i, k := range d.Keys {
		if !utf8.ValidString(k) {
			return 0, 0, fieldErr(join(path, "keys["+strconv.Itoa(i)+"]"), "%q is not valid UTF-8", k)
		}
		if i > 0 && k <= d.Keys[i-1] {
			return 0, 0, fieldErr(join(path, "keys["+strconv.Itoa(i)+"]"), "%q does not come after %q (keys must be sorted and unique)", k, d.Keys[i-1])
		}
	}
	return validateChildren(d.Spaces, path, depth, func(i int) string { return strconv.Quote(d.Keys[i]) })
}

// validateChildren checks a Dict's or Tuple's children (at depth+1, each at
// path.spaces[name(i)]) and returns the sums of their sizes and flat dimensions. A Dict's
// depth is checked before its keys, so the second check here only stops a Tuple.
func validateChildren(children []Space, path string, depth int, name func(i int) string) (size, flat int, err error) {
	if depth >= MaxDepth {
		return 0, 0, fieldErr(path, "nesting deeper than %d levels", MaxDepth)
	}
	for i, c := range children {
		cs, cf, err := validate(c, join(path, "spaces["+name(i)+"]"), depth+1)
		if err != nil {
			return 0, 0, err
		}
		size, flat = size+cs, flat+cf
		if size > MaxElements || flat > MaxElements {
			return 0, 0, fieldErr(path, "size exceeds the limit of %d", MaxElements)
		}
	}
	return size, flat, nil
}

func validateBox(b *Box, path string) (size, flat int, err error) {
	if !knownDtype(b.Dtype) {
		return 0, 0, fieldErr(join(path, "dtype"), "unknown dtype %q", b.Dtype)
	}
	n, err := checkShape(b.Shape, join(path, "shape"))
	if err != nil {
		return 0, 0, err
	}
	for _, f := range [2]struct {
		name string
		v    []float32
	}{{"low", b.Low}, {"high", b.High}} {
		if len(f.v) != n {
			return 0, 0, fieldErr(join(path, f.name), "has %d elements, want %d for shape %s", len(f.v), n, shapeString(b.Shape))
		}
	}
	isInt, dmin, dmax := dtypeLimits(b.Dtype)
	for i := range n {
		lo, hi := b.Low[i], b.High[i]
		pl := join(path, "low["+strconv.Itoa(i)+"]")
		ph := join(path, "high["+strconv.Itoa(i)+"]")
		if lo != lo {
			return 0, 0, fieldErr(pl, "is NaN")
		}
		if hi != hi {
			return 0, 0, fieldErr(ph, "is NaN")
		}
		if lo > hi {
			return 0, 0, fieldErr(pl, "%s is greater than high %s", fmtFloat(lo), fmtFloat(hi))
		}
		if isInt {
			for _, c := range [2]struct {
				p string
				v float32
				// inf is the infinity that makes no sense for this bound.
				inf int
			}{{pl, lo, 1}, {ph, hi, -1}} {
				if math.IsInf(float64(c.v), c.inf) {
					return 0, 0, fieldErr(c.p, "%s is not allowed for dtype %s", fmtFloat(c.v), b.Dtype)
				}
				if math.IsInf(float64(c.v), 0) {
					continue // the dtype's limit
				}
				if float64(c.v) != math.Floor(float64(c.v)) {
					return 0, 0, fieldErr(c.p, "must be an integer for dtype %s, got %s", b.Dtype, fmtFloat(c.v))
				}
				if c.v < dmin || c.v > dmax {
					return 0, 0, fieldErr(c.p, "%s is out of range for dtype %s", fmtFloat(c.v), b.Dtype)
				}
			}
		}
	}
	return n, n, nil
}

// checkShape returns prod(shape) after checking that every dimension is positive and the
// product is at most MaxElements.
func checkShape(shape []int, path string) (int, error) {
	if len(shape) > MaxDepth {
		return 0, fieldErr(path, "%d dimensions exceed the limit of %d", len(shape), MaxDepth)
	}
	n := 1
	for i, d := range shape {
		if d <= 0 {
			return 0, fieldErr(path+"["+strconv.Itoa(i)+"]", "must be positive, got %d", d)
		}
		if d > MaxElements || n*d > MaxElements {
			return 0, fieldErr(path, "%s has more than %d elements", shapeString(shape), MaxElements)
		}
		n *= d
	}
	return n, nil
}

// Equal reports whether a and b are the same space: the same type, and equal bounds, shape
// and dtype (an empty Box dtype equals "float32"), n and start, nvec, keys and children.
// Spaces implemented outside this package are never equal.
func Equal(a, b Space) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	switch a := a.(type) {
	case *Box:
		return sameAs(a, b, func(a, b *Box) bool {
			return dtypeOrDefault(a.Dtype) == dtypeOrDefault(b.Dtype) && slices.Equal(a.Shape, b.Shape) &&
				floatsEqual(a.Low, b.Low) && floatsEqual(a.High, b.High)
		})
	case *Discrete:
		return sameAs(a, b, func(a, b *Discrete) bool { return *a == *b })
	case *MultiDiscrete:
		return sameAs(a, b, func(a, b *MultiDiscrete) bool { return slices.Equal(a.Nvec, b.Nvec) })
	case *MultiBinary:
		return sameAs(a, b, func(a, b *MultiBinary) bool { return *a == *b })
	case *Dict:
		return sameAs(a, b, func(a, b *Dict) bool {
			return slices.Equal(a.Keys, b.Keys) && spacesEqual(a.Spaces, b.Spaces)
		})
	case *Tuple:
		return sameAs(a, b, func(a, b *Tuple) bool { return spacesEqual(a.Spaces, b.Spaces) })
	}
	return false
}

// sameAs reports whether b is also an S and equal to a by eq; two nil pointers of the same
// type are equal, a nil and a non-nil one are not.
func sameAs[S interface {
	comparable
	Space
}](a S, b Space, eq func(a, b S) bool) bool {
	var null S
	bs, ok := b.(S)
	if !ok || a == null || bs == null {
		return ok && a == null && bs == null
	}
	return eq(a, bs)
}

func floatsEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && (a[i] == a[i] || b[i] == b[i]) {
			return false
		}
	}
	return true
}

func spacesEqual(a, b []Space) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// String returns a short human form of s in gymnasium's style:
// Box(-1.0, 1.0, (3,), float32), Box([0.0 -1.0], [1.0 1.0], (2,), float32), Discrete(2),
// Discrete(3, start=-1), MultiDiscrete([3 4]), MultiBinary(5),
// Dict(a: Discrete(3), b: Box(...)), Tuple(Discrete(2), MultiBinary(3)).
func String(s Space) string {
	var sb strings.Builder
	writeString(&sb, s, 0)
	return sb.String()
}

func writeString(sb *strings.Builder, s Space, depth int) {
	if depth > MaxDepth {
		sb.WriteString("...")
		return
	}
	switch s := s.(type) {
	case nil:
		sb.WriteString("<nil>")
	case *Box:
		if s == nil {
			sb.WriteString("<nil>")
			return
		}
		sb.WriteString("Box(")
		writeBound(sb, s.Low)
		sb.WriteString(", ")
		writeBound(sb, s.High)
		sb.WriteString(", ")
		sb.WriteString(shapeString(s.Shape))
		sb.WriteString(", ")
		sb.WriteString(dtypeOrDefault(s.Dtype))
		sb.WriteString(")")
	case *Discrete:
		if s == nil {
			sb.WriteString("<nil>")
			return
		}
		if s.Start == 0 {
			fmt.Fprintf(sb, "Discrete(%d)", s.N)
		} else {
			fmt.Fprintf(sb, "Discrete(%d, start=%d)", s.N, s.Start)
		}
	case *MultiDiscrete:
		if s == nil {
			sb.WriteString("<nil>")
			return
		}
		sb.WriteString("MultiDiscrete([")
		for i, k := range s.Nvec {
			if i > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(strconv.FormatInt(k, 10))
		}
		sb.WriteString("])")
	case *MultiBinary:
		if s == nil {
			sb.WriteString("<nil>")
			return
		}
		fmt.Fprintf(sb, "MultiBinary(%d)", s.N)
	case *Dict:
		if s == nil {
			sb.WriteString("<nil>")
			return
		}
		sb.WriteString("Dict(")
		for i, c := range s.Spaces {
			if i > 0 {
				sb.WriteString(", ")
			}
			if i < len(s.Keys) {
				sb.WriteString(s.Keys[i])
			}
			sb.WriteString(": ")
			writeString(sb, c, depth+1)
		}
		sb.WriteString(")")
	case *Tuple:
		if s == nil {
			sb.WriteString("<nil>")
			return
		}
		sb.WriteString("Tuple(")
		for i, c := range s.Spaces {
			if i > 0 {
				sb.WriteString(", ")
			}
			writeString(sb, c, depth+1)
		}
		sb.WriteString(")")
	default:
		fmt.Fprintf(sb, "%s(%T)", s.Type(), s)
	}
}

// writeBound writes a scalar when all elements are equal, else a numpy-style list.
func writeBound(sb *strings.Builder, v []float32) {
	if len(v) > 0 && allEqual(v) {
		sb.WriteString(fmtFloat(v[0]))
		return
	}
	sb.WriteByte('[')
	for i, x := range v {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(fmtFloat(x))
	}
	sb.WriteByte(']')
}

func allEqual(v []float32) bool {
	for _, x := range v[1:] {
		if x != v[0] {
			return false
		}
	}
	return true
}

// fmtFloat formats like Python: 1.0, -0.5, inf, -inf, nan, 1e+09.
func fmtFloat(v float32) string {
	f := float64(v)
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f != f:
		return "nan"
	case f == math.Trunc(f) && math.Abs(f) < 1e16:
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 32)
}

// shapeString formats a shape as a Python tuple: (), (3,), (2, 3).
func shapeString(shape []int) string {
	switch len(shape) {
	case 0:
		return "()"
	case 1:
		return "(" + strconv.Itoa(shape[0]) + ",)"
	}
	var sb strings.Builder
	sb.WriteByte('(')
	for i, d := range shape {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(strconv.Itoa(d))
	}
	sb.WriteByte(')')
	return sb.String()
}
