package spaces

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// MaxElements bounds Size and FlatDim of any valid space (and n of Discrete, the entries of
// MultiDiscrete's nvec, the values of a Discrete): 2^24, the largest range in which float32
// represents every integer exactly, and a cap that keeps a hostile JSON document from
// allocating gigabytes.
const MaxElements = 1 << 24

// MaxDepth is the deepest nesting of Dict and Tuple spaces that Unmarshal and Validate accept.
const MaxDepth = 32

// Space is a gymnasium-style space.
//
// Values of a space are carried in its raw layout: a flat []float32 of length Size().
// Box: its elements in row-major order; Discrete: one value, the actual value
// (Start..Start+N-1); MultiDiscrete: len(Nvec) values, each in 0..Nvec[i]-1; MultiBinary: N
// values, each 0 or 1; Tuple: the concatenation of its children's raw layouts in order;
// Dict: the concatenation of its children's raw layouts in sorted key order.
//
// Size, FlatDim, Contains, Sample and Flatten assume a valid space (Validate returns nil);
// Sample and Flatten panic when a buffer has the wrong length (a programmer error).
// None of Contains, Sample and Flatten allocates.
type Space interface {
	// Type is the gymnasium class name: "Box", "Discrete", "MultiDiscrete", "MultiBinary",
	// "Dict" or "Tuple".
	Type() string
	// Size is the number of float32 scalars in the raw layout.
	Size() int
	// FlatDim is gymnasium.spaces.flatdim: Discrete n (one-hot), MultiDiscrete sum(nvec),
	// MultiBinary n, Box prod(shape), Dict and Tuple the sum over their children.
	FlatDim() int
	// Contains reports whether x (raw layout) is an element of the space. It is false on a
	// wrong length, NaN, out-of-bounds values and non-integers for the discrete kinds and
	// integer Box dtypes.
	Contains(x []float32) bool
	// Sample fills dst (len Size()) with a random element drawn as gymnasium's Space.sample
	// does and returns dst.
	Sample(rng *rand.Rand, dst []float32) []float32
	// Flatten writes gymnasium.spaces.flatten of the raw value x into dst (len FlatDim())
	// and returns dst. x must be an element of the space (see Contains).
	Flatten(dst, x []float32) []float32
	// Validate returns a *FieldError naming the offending field when the space is
	// impossible (non-positive n, low > high, wrong bounds length, unknown dtype, ...).
	Validate() error
	json.Marshaler
}

// Box is a possibly unbounded box in R^n (gymnasium.spaces.Box).
type Box struct {
	// Low and High are the per-element bounds in row-major order, len prod(Shape).
	// They may be -Inf / +Inf.
	Low, High []float32
	// Shape is the shape of the box; an empty shape is a scalar (Size 1).
	Shape []int
	// Dtype is the numpy dtype name: "float32" (the default when empty), "float64", "int8",
	// "int16", "int32", "int64", "uint8", "uint16", "uint32" or "uint64".
	Dtype string
}

// NewBox returns a float32 Box of the given shape with every element bounded by the scalars
// low and high. With no shape it is a scalar box. It panics on a negative dimension.
func NewBox(low, high float32, shape ...int) *Box {
	n := shapeProduct("NewBox", shape)
	b := &Box{Low: make([]float32, n), High: make([]float32, n), Shape: slices.Clone(shape), Dtype: "float32"}
	for i := range n {
		b.Low[i], b.High[i] = low, high
	}
	if b.Shape == nil {
		b.Shape = []int{}
	}
	return b
}

// NewBoxBounds returns a float32 Box with per-element bounds (copied). With no shape the box
// is one-dimensional, shape (len(low),). It panics if len(low) != len(high) or the lengths do
// not match the shape.
func NewBoxBounds(low, high []float32, shape ...int) *Box {
	if len(low) != len(high) {
		panic("spaces: NewBoxBounds: len(low) != len(high)")
	}
	if len(shape) == 0 {
		shape = []int{len(low)}
	}
	if n := shapeProduct("NewBoxBounds", shape); n != len(low) {
		panic("spaces: NewBoxBounds: bounds length does not match shape")
	}
	return &Box{Low: slices.Clone(low), High: slices.Clone(high), Shape: slices.Clone(shape), Dtype: "float32"}
}

func shapeProduct(fn string, shape []int) int {
	n := 1
	for _, d := range shape {
		if d < 0 {
			panic("spaces: " + fn + ": negative dimension")
		}
		n *= d
	}
	return n
}

// Type returns "Box".
func (b *Box) Type() string { return "Box" }

// Size returns prod(Shape) (1 for a scalar box).
func (b *Box) Size() int {
	n := 1
	for _, d := range b.Shape {
		n *= d
	}
	return n
}

// FlatDim returns prod(Shape).
func (b *Box) FlatDim() int { return b.Size() }

// Contains reports whether every element of x is within [Low, High], not NaN, and for
// integer dtypes integral and within the dtype's range.
func (b *Box) Contains(x []float32) bool {
	if len(x) != b.Size() || len(b.Low) != len(x) || len(b.High) != len(x) {
		return false
	}
	isInt, dmin, dmax := dtypeLimits(b.Dtype)
	for i, v := range x {
		if v != v || v < b.Low[i] || v > b.High[i] {
			return false
		}
		if isInt && (v < dmin || v > dmax || float64(v) != math.Floor(float64(v))) {
			return false
		}
	}
	return true
}

// Sample draws each element as gymnasium does: unbounded on both sides from N(0, 1),
// bounded below only as low + Exp(1), bounded above only as high - Exp(1), bounded on both
// sides uniformly from [low, high]. For integer dtypes the draw uses high+1 as the upper end
// and is floored (so bounded elements are uniform integers in [low, high]), then clamped to
// the dtype's range.
func (b *Box) Sample(rng *rand.Rand, dst []float32) []float32 {
	n := b.Size()
	if len(dst) != n {
		badLen("Box.Sample", "dst", len(dst), n)
	}
	isInt, dmin, dmax := dtypeLimits(b.Dtype)
	for i := range n {
		lo, hi := float64(b.Low[i]), float64(b.High[i])
		if isInt && !math.IsInf(hi, 0) {
			hi++
		}
		var v float64
		switch below, above := !math.IsInf(lo, -1), !math.IsInf(hi, 1); {
		case !below && !above:
			v = rng.NormFloat64()
		case below && !above:
			v = lo + rng.ExpFloat64()
		case !below && above:
			v = hi - rng.ExpFloat64()
		default:
			v = lo + rng.Float64()*(hi-lo)
		}
		if isInt {
			v = math.Floor(v)
			v = max(v, float64(b.Low[i]), float64(dmin))
			v = min(v, float64(b.High[i]), float64(dmax))
		}
		dst[i] = float32(v)
	}
	return dst
}

// Flatten copies x into dst.
func (b *Box) Flatten(dst, x []float32) []float32 {
	n := b.Size()
	if len(dst) != n {
		badLen("Box.Flatten", "dst", len(dst), n)
	}
	if len(x) != n {
		badLen("Box.Flatten", "x", len(x), n)
	}
	copy(dst, x)
	return dst
}

// Discrete is the set {Start, Start+1, ..., Start+N-1} (gymnasium.spaces.Discrete).
type Discrete struct {
	N, Start int64
}

// Type returns "Discrete".
func (d *Discrete) Type() string { return "Discrete" }

// Size returns 1.
func (d *Discrete) Size() int { return 1 }

// FlatDim returns N (the length of the one-hot encoding).
func (d *Discrete) FlatDim() int { return int(d.N) }

// Contains reports whether x is a single integer in [Start, Start+N).
func (d *Discrete) Contains(x []float32) bool {
	if len(x) != 1 {
		return false
	}
	// An integral float32 converts to int64 exactly and back to itself; a fraction, NaN or
	// an infinity does not come back. i-Start is the distance from Start, exact as a uint64.
	f := x[0]
	i := int64(f)
	return float32(i) == f && i >= d.Start && uint64(i-d.Start) < uint64(d.N)
}

// Sample draws uniformly from [Start, Start+N).
func (d *Discrete) Sample(rng *rand.Rand, dst []float32) []float32 {
	if len(dst) != 1 {
		badLen("Discrete.Sample", "dst", len(dst), 1)
	}
	dst[0] = float32(d.Start + rng.Int64N(d.N))
	return dst
}

// Flatten writes the one-hot encoding of x[0]-Start into dst.
func (d *Discrete) Flatten(dst, x []float32) []float32 {
	if len(dst) != int(d.N) {
		badLen("Discrete.Flatten", "dst", len(dst), int(d.N))
	}
	if len(x) != 1 {
		badLen("Discrete.Flatten", "x", len(x), 1)
	}
	clear(dst)
	dst[int64(x[0])-d.Start] = 1
	return dst
}

// MultiDiscrete is the cartesian product of Discrete(Nvec[i]) spaces, each starting at 0
// (gymnasium.spaces.MultiDiscrete with a one-dimensional nvec).
type MultiDiscrete struct {
	Nvec []int64
}

// Type returns "MultiDiscrete".
func (m *MultiDiscrete) Type() string { return "MultiDiscrete" }

// Size returns len(Nvec).
func (m *MultiDiscrete) Size() int { return len(m.Nvec) }

// FlatDim returns sum(Nvec).
func (m *MultiDiscrete) FlatDim() int {
	n := 0
	for _, k := range m.Nvec {
		n += int(k)
	}
	return n
}

// Contains reports whether x[i] is an integer in [0, Nvec[i]) for every i.
func (m *MultiDiscrete) Contains(x []float32) bool {
	if len(x) != len(m.Nvec) {
		return false
	}
	for i, v := range x {
		f := float64(v)
		if f != math.Floor(f) || f < 0 || f >= float64(m.Nvec[i]) {
			return false
		}
	}
	return true
}

// Sample draws each element uniformly from [0, Nvec[i]).
func (m *MultiDiscrete) Sample(rng *rand.Rand, dst []float32) []float32 {
	if len(dst) != len(m.Nvec) {
		badLen("MultiDiscrete.Sample", "dst", len(dst), len(m.Nvec))
	}
	for i, k := range m.Nvec {
		dst[i] = float32(rng.Int64N(k))
	}
	return dst
}

// Flatten writes the concatenated one-hot encodings of the elements of x into dst.
func (m *MultiDiscrete) Flatten(dst, x []float32) []float32 {
	if n := m.FlatDim(); len(dst) != n {
		badLen("MultiDiscrete.Flatten", "dst", len(dst), n)
	}
	if len(x) != len(m.Nvec) {
		badLen("MultiDiscrete.Flatten", "x", len(x), len(m.Nvec))
	}
	clear(dst)
	off := 0
	for i, k := range m.Nvec {
		j := int64(x[i])
		if j < 0 || j >= k {
			panic("spaces: MultiDiscrete.Flatten: value out of range")
		}
		dst[off+int(j)] = 1
		off += int(k)
	}
	return dst
}

// MultiBinary is the set of binary vectors of length N (gymnasium.spaces.MultiBinary).
type MultiBinary struct {
	N int
}

// Type returns "MultiBinary".
func (m *MultiBinary) Type() string { return "MultiBinary" }

// Size returns N.
func (m *MultiBinary) Size() int { return m.N }

// FlatDim returns N.
func (m *MultiBinary) FlatDim() int { return m.N }

// Contains reports whether x has N elements, each 0 or 1.
func (m *MultiBinary) Contains(x []float32) bool {
	if len(x) != m.N {
		return false
	}
	for _, v := range x {
		if v != 0 && v != 1 {
			return false
		}
	}
	return true
}

// Sample draws each element uniformly from {0, 1}.
func (m *MultiBinary) Sample(rng *rand.Rand, dst []float32) []float32 {
	if len(dst) != m.N {
		badLen("MultiBinary.Sample", "dst", len(dst), m.N)
	}
	for i := range dst {
		dst[i] = float32(rng.IntN(2))
	}
	return dst
}

// Flatten copies x into dst.
func (m *MultiBinary) Flatten(dst, x []float32) []float32 {
	if len(dst) != m.N {
		badLen("MultiBinary.Flatten", "dst", len(dst), m.N)
	}
	if len(x) != m.N {
		badLen("MultiBinary.Flatten", "x", len(x), m.N)
	}
	copy(dst, x)
	return dst
}

// Dict is a dictionary of named spaces (gymnasium.spaces.Dict). Keys are sorted and unique,
// as gymnasium sorts the keys of a plain dict; Spaces[i] is the space of Keys[i].
type Dict struct {
	Keys   []string
	Spaces []Space
}

// NewDict returns a Dict of the spaces in m with sorted keys.
func NewDict(m map[string]Space) *Dict {
	d := &Dict{Keys: make([]string, 0, len(m)), Spaces: make([]Space, 0, len(m))}
	for k := range m {
		d.Keys = append(d.Keys, k)
	}
	sort.Strings(d.Keys)
	for _, k := range d.Keys {
		d.Spaces = append(d.Spaces, m[k])
	}
	return d
}

// Type returns "Dict".
func (d *Dict) Type() string { return "Dict" }

// Size returns the sum of the children's sizes.
func (d *Dict) Size() int { return sumSize(d.Spaces) }

// FlatDim returns the sum of the children's flat dimensions.
func (d *Dict) FlatDim() int { return sumFlatDim(d.Spaces) }

// Contains reports whether each child contains its part of x.
func (d *Dict) Contains(x []float32) bool { return containsAll(d.Spaces, x) }

// Sample samples each child into its part of dst.
func (d *Dict) Sample(rng *rand.Rand, dst []float32) []float32 {
	return sampleAll("Dict.Sample", d.Spaces, rng, dst)
}

// Flatten flattens each child, in key order, into consecutive parts of dst.
func (d *Dict) Flatten(dst, x []float32) []float32 {
	return flattenAll("Dict.Flatten", d.Spaces, dst, x)
}

// Tuple is an ordered sequence of spaces (gymnasium.spaces.Tuple).
type Tuple struct {
	Spaces []Space
}

// Type returns "Tuple".
func (t *Tuple) Type() string { return "Tuple" }

// Size returns the sum of the children's sizes.
func (t *Tuple) Size() int { return sumSize(t.Spaces) }

// FlatDim returns the sum of the children's flat dimensions.
func (t *Tuple) FlatDim() int { return sumFlatDim(t.Spaces) }

// Contains reports whether each child contains its part of x.
func (t *Tuple) Contains(x []float32) bool { return containsAll(t.Spaces, x) }

// Sample samples each child into its part of dst.
func (t *Tuple) Sample(rng *rand.Rand, dst []float32) []float32 {
	return sampleAll("Tuple.Sample", t.Spaces, rng, dst)
}

// Flatten flattens each child, in order, into consecutive parts of dst.
func (t *Tuple) Flatten(dst, x []float32) []float32 {
	return flattenAll("Tuple.Flatten", t.Spaces, dst, x)
}

func sumSize(ss []Space) int {
	n := 0
	for _, s := range ss {
		n += s.Size()
	}
	return n
}

func sumFlatDim(ss []Space) int {
	n := 0
	for _, s := range ss {
		n += s.FlatDim()
	}
	return n
}

func containsAll(ss []Space, x []float32) bool {
	off := 0
	for _, s := range ss {
		n := s.Size()
		if off+n > len(x) || !s.Contains(x[off:off+n]) {
			return false
		}
		off += n
	}
	return off == len(x)
}

func sampleAll(op string, ss []Space, rng *rand.Rand, dst []float32) []float32 {
	if n := sumSize(ss); len(dst) != n {
		badLen(op, "dst", len(dst), n)
	}
	off := 0
	for _, s := range ss {
		n := s.Size()
		s.Sample(rng, dst[off:off+n])
		off += n
	}
	return dst
}

func flattenAll(op string, ss []Space, dst, x []float32) []float32 {
	if n := sumFlatDim(ss); len(dst) != n {
		badLen(op, "dst", len(dst), n)
	}
	if n := sumSize(ss); len(x) != n {
		badLen(op, "x", len(x), n)
	}
	off, doff := 0, 0
	for _, s := range ss {
		n, fn := s.Size(), s.FlatDim()
		s.Flatten(dst[doff:doff+fn], x[off:off+n])
		off += n
		doff += fn
	}
	return dst
}

// dtypeLimits reports whether the Box dtype is an integer type and, if so, its range as
// float32 values (rounded; the range of float dtypes is unbounded).
func dtypeLimits(dtype string) (isInt bool, lo, hi float32) {
	switch dtype {
	case "int8":
		return true, math.MinInt8, math.MaxInt8
	case "int16":
		return true, math.MinInt16, math.MaxInt16
	case "int32":
		return true, math.MinInt32, math.MaxInt32
	case "int64":
		return true, math.MinInt64, math.MaxInt64
	case "uint8":
		return true, 0, math.MaxUint8
	case "uint16":
		return true, 0, math.MaxUint16
	case "uint32":
		return true, 0, math.MaxUint32
	case "uint64":
		return true, 0, math.MaxUint64
	}
	return false, float32(math.Inf(-1)), float32(math.Inf(1))
}

// knownDtype reports whether dtype is one of the Box dtypes this package supports.
func knownDtype(dtype string) bool {
	switch dtype {
	case "", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64":
		return true
	}
	return false
}

func dtypeOrDefault(dtype string) string {
	if dtype == "" {
		return "float32"
	}
	return dtype
}
