package inference

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/onnxrl/sampler/internal/onnxtest"
)

// FuzzNativeGraphs: the fuzzer's bytes choose a small graph of the operators the native
// provider supports (MatMul or Gemm with constant weights, broadcasting arithmetic,
// activations, Softmax and the shape operators), with small shapes (zero-sized dimensions
// included) and constant parameters that are sometimes out of range. Where the CPU provider
// runs the graph, ours must too, with the same output shapes and values (to 1e-5, relative to
// the output's largest magnitude when above 1); where the CPU provider rejects it, ours must
// return an error. Neither may crash the process. Both run with the runtime's graph
// optimizations unless these change the CPU provider's result.
func FuzzNativeGraphs(f *testing.F) {
	for _, seed := range [][]byte{
		{},                                   // a MatMul of a scalar input's graph
		{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc}, // small arbitrary ones
		{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24},
		{2, 0x21, 3, 4, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
		{3, 0x30, 2, 0, 4, 5, 6, 1, 9, 2, 7, 3, 8, 4, 10, 5, 11, 6, 12},
		{4, 0x42, 1, 3, 3, 8, 2, 9, 4, 10, 6, 11, 7, 12, 13, 14, 1, 2, 3, 200, 201, 202, 203},
		{5, 0xff, 0xfe, 0xfd, 0xfc, 0xfb, 0xfa, 0xf9, 0xf8, 0xf7, 0xf6, 0xf5, 0xf4, 0xf3, 0xf2, 0xf1},
		{6, 0x10, 5, 2, 12, 13, 14, 12, 13, 14, 12, 13, 14, 12, 13, 14},
		{7, 0x23, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
		{8, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		needNative(t)
		g := genGraph(data)
		m, err := LoadBytes("fuzz", g.model.Bytes())
		if err != nil {
			t.Fatalf("the generated model does not load: %v", err)
		}
		opts := Options{IntraOpThreads: 1, DimValues: g.dimValues}
		want, cpuErr := runOnce(m, opts)
		plain := opts
		plain.GraphOptimization = "disable"
		wantPlain, plainErr := runOnce(m, plain)
		if (cpuErr == nil) != (plainErr == nil) || (cpuErr == nil && sameOutputs(want, wantPlain) != "") {
			// The runtime's own graph optimizations change what the CPU provider does here
			// (a FusedMatMul fails on an empty batch or leaves a K = 0 output undefined, an
			// empty folded constant becomes an output): both providers run without them.
			want, cpuErr, opts = wantPlain, plainErr, plain
		}
		opts.Device = "native"
		got, natErr := runOnce(m, opts)
		if natErr != nil && cpuErr == nil && strings.Contains(natErr.Error(), "outside the axis and adds to it") {
			// A Concat of an empty input whose other dimensions differ: the CPU provider adds
			// rows of undefined values along the axis, ours refuses it (the operator does).
			return
		}
		checkAgainstCPU(t, want, got, cpuErr, natErr, g.String())
	})
}

// checkAgainstCPU fails t unless our provider's run (got, natErr) agrees with the CPU
// provider's (want, cpuErr): both refuse the graph, or both run it with the same outputs
// (sameOutputs). It reports whether the outputs were compared; desc describes the graph.
func checkAgainstCPU(t *testing.T, want, got outputs, cpuErr, natErr error, desc string) bool {
	t.Helper()
	switch {
	case cpuErr != nil && natErr == nil:
		t.Fatalf("the CPU provider rejects the graph (%v), ours runs it\n%s", cpuErr, desc)
	case cpuErr != nil:
		return false
	case natErr != nil:
		t.Fatalf("the CPU provider runs the graph, ours fails: %v\n%s", natErr, desc)
	}
	if msg := sameOutputs(want, got); msg != "" {
		t.Fatalf("%s\n%s", msg, desc)
	}
	return true
}

// outputs are a run's outputs: shapes and float32 values.
type outputs struct {
	shapes [][]int64
	values [][]float32
}

// runOnce opens a session of m, fills its inputs with fixed pseudo-random values, runs it once
// and returns the outputs.
func runOnce(m *Model, opts Options) (outputs, error) {
	var o outputs
	s, err := NewSession(m, opts)
	if err != nil {
		return o, err
	}
	defer s.Close()
	if err := s.SetBatch(s.Capacity()); err != nil {
		return o, err
	}
	rng := rand.New(rand.NewSource(5))
	for _, in := range s.Inputs() {
		x := in.Float32()
		for i := range x {
			x[i] = float32(rng.Float64()*2 - 1)
		}
	}
	if err := s.Run(); err != nil {
		return o, err
	}
	for _, out := range s.Outputs() {
		o.shapes = append(o.shapes, slices.Clone(out.Shape()))
		o.values = append(o.values, slices.Clone(out.Float32()))
	}
	return o, nil
}

// sameOutputs compares b with a (the CPU provider's); "" when they agree. Values agree within
// 1e-5 of the output's largest finite magnitude (at least 1); NaNs and infinities must match.
func sameOutputs(a, b outputs) string {
	for i := range a.values {
		if !slices.Equal(a.shapes[i], b.shapes[i]) {
			return fmt.Sprintf("output %d: shape %v, the CPU provider's %v", i, b.shapes[i], a.shapes[i])
		}
		want, got := a.values[i], b.values[i]
		if len(want) != len(got) {
			return fmt.Sprintf("output %d: %d values, the CPU provider's %d", i, len(got), len(want))
		}
		scale := 1.0
		for _, w := range want {
			if !math.IsInf(float64(w), 0) && !math.IsNaN(float64(w)) {
				scale = math.Max(scale, math.Abs(float64(w)))
			}
		}
		for j := range want {
			w, g := float64(want[j]), float64(got[j])
			switch {
			case math.IsNaN(w) && g == 0:
				// Relu(NaN) is NaN on the CPU provider and 0 in ours (kernels.h): a known
				// difference, reported; NaN comes from 0/0 in these graphs.
			case math.IsNaN(w) || math.IsNaN(g):
				if math.IsNaN(w) != math.IsNaN(g) {
					return fmt.Sprintf("output %d[%d] = %v, the CPU provider's %v", i, j, g, w)
				}
			case math.IsInf(w, 0) || math.IsInf(g, 0):
				// Either sign: x/0 takes the sign of a zero, which the providers need not agree on.
				if !math.IsInf(w, 0) || !math.IsInf(g, 0) {
					return fmt.Sprintf("output %d[%d] = %v, the CPU provider's %v", i, j, g, w)
				}
			case math.Abs(w-g) > 1e-5*scale:
				return fmt.Sprintf("output %d[%d] = %v, the CPU provider's %v", i, j, g, w)
			}
		}
	}
	return ""
}

// byteSource hands out the fuzzer's bytes, then pseudo-random ones seeded by them.
type byteSource struct {
	b   []byte
	i   int
	rng *rand.Rand
}

func (s *byteSource) byte() byte {
	if s.i >= len(s.b) {
		return byte(s.rng.Intn(256))
	}
	s.i++
	return s.b[s.i-1]
}

// intn is a number in [0, n) from the next byte.
func (s *byteSource) intn(n int) int {
	if n <= 1 {
		return 0
	}
	return int(s.byte()) % n
}

// rare is true for about one byte in k.
func (s *byteSource) rare(k int) bool { return s.intn(k) == 0 }

// fuzzGraph is a generated model and the values of its dynamic dimensions.
type fuzzGraph struct {
	model     onnxtest.Model
	dimValues map[string]int64
	shapes    map[string][]int64 // each float value's shape when the graph is valid (a guess after an invalid node)
	vals      []string           // float values, in order of creation
	used      map[string]bool
	rng       *rand.Rand
	src       *byteSource
	n         int
}

func (g *fuzzGraph) String() string {
	var b strings.Builder
	for _, in := range g.model.Inputs {
		fmt.Fprintf(&b, "input %s %v %v\n", in.Name, in.Dims, in.Names)
	}
	fmt.Fprintf(&b, "dims %v\n", g.dimValues)
	for _, in := range g.model.Initializers {
		if in.ElemType == onnxtest.Int64 {
			fmt.Fprintf(&b, "const %s %v int64 %v\n", in.Name, in.Dims, in.Ints)
		} else {
			fmt.Fprintf(&b, "const %s %v float32 (%d values)\n", in.Name, in.Dims, len(in.Data))
		}
	}
	for _, n := range g.model.Nodes {
		fmt.Fprintf(&b, "%s %s %v -> %v", n.Name, n.Op, n.Inputs, n.Outputs)
		for _, a := range n.Attrs {
			switch a.Kind {
			case onnxtest.AttrInt:
				fmt.Fprintf(&b, " %s=%d", a.Name, a.Int)
			case onnxtest.AttrFloat:
				fmt.Fprintf(&b, " %s=%g", a.Name, a.Float)
			case onnxtest.AttrInts:
				fmt.Fprintf(&b, " %s=%v", a.Name, a.Ints)
			}
		}
		b.WriteString("\n")
	}
	for _, out := range g.model.Outputs {
		fmt.Fprintf(&b, "output %s\n", out.Name)
	}
	return b.String()
}

func (g *fuzzGraph) name(prefix string) string {
	g.n++
	return fmt.Sprintf("%s%d", prefix, g.n)
}

// floats adds a float32 constant of shape dims.
func (g *fuzzGraph) floats(dims []int64) string {
	n := int64(1)
	for _, d := range dims {
		if d < 0 || d > 1<<16 || n*d > 1<<16 {
			// Tracked from a hostile node (the graph fails there anyway): a small constant.
			dims, n = []int64{1}, 1
			break
		}
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(g.rng.Float64()*2 - 1)
	}
	name := g.name("c")
	g.model.Initializers = append(g.model.Initializers, onnxtest.Initializer{Name: name, Dims: slices.Clone(dims), Data: v})
	return name
}

// int64s adds an int64 constant; a 1-D one unless dims says otherwise.
func (g *fuzzGraph) int64s(dims []int64, v ...int64) string {
	if dims == nil {
		dims = []int64{int64(len(v))}
	}
	name := g.name("k")
	g.model.Initializers = append(g.model.Initializers, onnxtest.Initializer{Name: name, Dims: dims, ElemType: onnxtest.Int64, Ints: v})
	return name
}

// pick chooses a float value, the newest more often.
func (g *fuzzGraph) pick() string {
	k := len(g.vals)
	if g.src.intn(3) == 0 {
		return g.vals[g.src.intn(k)]
	}
	return g.vals[k-1]
}

func (g *fuzzGraph) node(op string, ins []string, outShapes [][]int64, attrs ...onnxtest.Attr) []string {
	var outs []string
	for _, sh := range outShapes {
		o := g.name("v")
		g.shapes[o] = sh
		g.vals = append(g.vals, o)
		outs = append(outs, o)
	}
	for _, in := range ins {
		g.used[in] = true
	}
	g.model.Nodes = append(g.model.Nodes, onnxtest.Node{Name: g.name(strings.ToLower(op)), Op: op, Inputs: ins, Outputs: outs, Attrs: attrs})
	return outs
}

// hostile are the out-of-range values the generator mixes into indices, starts and ends.
var hostile = []int64{math.MaxInt64, math.MinInt64, 1 << 40, -(1 << 40), 1<<62 + 1}

// index is an index into a dimension of size dim: mostly in range (negative ones included),
// sometimes just out of range or hostile.
func (g *fuzzGraph) index(dim int64) int64 {
	switch g.src.intn(12) {
	case 0:
		return dim
	case 1:
		return -dim - 1
	case 2:
		return hostile[g.src.intn(len(hostile))]
	}
	if dim == 0 {
		return 0
	}
	i := int64(g.src.intn(int(dim)))
	if g.src.intn(2) == 0 {
		i -= dim
	}
	return i
}

// axis is an axis of a rank-r shape, negative half the time, out of range rarely.
func (g *fuzzGraph) axis(r int) int64 {
	if r == 0 || g.src.intn(16) == 0 {
		return int64(r)
	}
	a := int64(g.src.intn(r))
	if g.src.intn(2) == 0 {
		a -= int64(r)
	}
	return a
}

func numel(s []int64) int64 {
	n := int64(1)
	for _, d := range s {
		n *= d
	}
	return n
}

func norm(a int64, r int) int {
	if a < 0 {
		a += int64(r)
	}
	if a < 0 || a >= int64(r) {
		return 0
	}
	return int(a)
}

// broadcast is the shape a and b broadcast to, false when they do not.
func broadcast(a, b []int64) ([]int64, bool) {
	r := max(len(a), len(b))
	o := make([]int64, r)
	for d := 0; d < r; d++ {
		da, db := int64(1), int64(1)
		if i := d - (r - len(a)); i >= 0 {
			da = a[i]
		}
		if i := d - (r - len(b)); i >= 0 {
			db = b[i]
		}
		switch {
		case da == db || db == 1:
			o[d] = da
		case da == 1:
			o[d] = db
		default:
			return nil, false
		}
	}
	return o, true
}

// genGraph builds the graph data chooses.
func genGraph(data []byte) *fuzzGraph {
	seed := int64(0)
	for _, c := range data {
		seed = seed*31 + int64(c)
	}
	src := &byteSource{b: data, rng: rand.New(rand.NewSource(seed + 1))}
	g := &fuzzGraph{dimValues: map[string]int64{}, shapes: map[string][]int64{}, used: map[string]bool{},
		rng: rand.New(rand.NewSource(seed)), src: src}
	nin := 1 + src.intn(2)
	for i := 0; i < nin; i++ {
		r := 1 + src.intn(3) // sessions take no scalar inputs
		v := onnxtest.Value{Name: fmt.Sprintf("x%d", i), ElemType: onnxtest.Float32}
		shape := make([]int64, r)
		for d := 0; d < r; d++ {
			c := src.byte()
			size := int64(c % 6)
			if c >= 200 && size > 0 {
				// A dynamic dimension, its value given through DimValues (never 0).
				dn := fmt.Sprintf("d%d_%d", i, d)
				g.dimValues[dn] = size
				v.Dims = append(v.Dims, -1)
				v.Names = append(v.Names, dn)
			} else {
				v.Dims = append(v.Dims, size)
				v.Names = append(v.Names, "")
			}
			shape[d] = size
		}
		g.model.Inputs = append(g.model.Inputs, v)
		g.shapes[v.Name] = shape
		g.vals = append(g.vals, v.Name)
	}
	nops := 2 + src.intn(5)
	dense := false
	for i := 0; i < nops; i++ {
		op := src.intn(16)
		if i == nops-1 && !dense {
			op = 0
		}
		dense = g.addOp(op) || dense
	}
	for _, v := range slices.Clone(g.vals) {
		if g.used[v] || strings.HasPrefix(v, "x") {
			continue
		}
		if len(g.shapes[v]) == 0 {
			// Sessions take no scalar outputs: one of [1].
			v = g.node("Reshape", []string{v, g.int64s(nil, 1)}, [][]int64{{1}})[0]
		}
		g.model.Outputs = append(g.model.Outputs, onnxtest.Value{Name: v, ElemType: onnxtest.Float32, NoShape: true})
	}
	return g
}

// addOp appends operator op (0 to 15) on values of the graph; true for a MatMul or Gemm.
func (g *fuzzGraph) addOp(op int) bool {
	src := g.src
	x := g.pick()
	s := g.shapes[x]
	r := len(s)
	switch op {
	case 0, 1: // MatMul, or Gemm on a 2-D input
		if r == 0 {
			x, s, r = g.vals[len(g.vals)-1], g.shapes[g.vals[len(g.vals)-1]], len(g.shapes[g.vals[len(g.vals)-1]])
		}
		if r == 0 {
			// A MatMul needs a rank: flatten the scalar first.
			x = g.node("Reshape", []string{x, g.int64s(nil, 1)}, [][]int64{{1}})[0]
			s, r = []int64{1}, 1
		}
		K, N := s[r-1], int64(src.intn(5))
		if src.rare(16) {
			K++
		}
		if op == 1 && r == 2 {
			transB := src.intn(2)
			w := []int64{K, N}
			if transB == 1 {
				w = []int64{N, K}
			}
			ins := []string{x, g.floats(w)}
			switch src.intn(6) {
			case 1:
				ins = append(ins, g.floats([]int64{N}))
			case 2:
				ins = append(ins, g.floats([]int64{1, N}))
			case 3:
				ins = append(ins, g.floats([]int64{1}))
			case 4:
				ins = append(ins, g.floats(nil))
			case 5:
				ins = append(ins, g.floats([]int64{s[0], N}))
			}
			alphas := []float32{1, 0.5, -2}
			g.node("Gemm", ins, [][]int64{{s[0], N}}, onnxtest.IntAttr("transB", int64(transB)),
				onnxtest.FloatAttr("alpha", alphas[src.intn(3)]), onnxtest.FloatAttr("beta", alphas[src.intn(3)]))
			return true
		}
		o := append(slices.Clone(s[:r-1]), N)
		g.node("MatMul", []string{x, g.floats([]int64{K, N})}, [][]int64{o})
		return true
	case 2, 3: // Add, Sub, Mul, Div
		ops := []string{"Add", "Sub", "Mul", "Div"}
		name := ops[src.intn(4)]
		var y string
		var ys []int64
		if src.intn(3) == 0 && name != "Div" {
			// Another value, where one broadcasts. (Not as a denominator: a computed value near 0
			// amplifies the providers' last-bit differences past any tolerance.)
			for _, v := range g.vals {
				if _, ok := broadcast(s, g.shapes[v]); ok && v != x && src.intn(2) == 0 {
					y, ys = v, g.shapes[v]
				}
			}
		}
		if y == "" {
			k := src.intn(r + 1)
			ys = slices.Clone(s[r-k:])
			for i := range ys {
				if src.intn(3) == 0 {
					ys[i] = 1
				}
			}
			if k > 0 && src.rare(16) {
				ys[0]++
			}
			y = g.floats(ys)
			if name == "Div" {
				// Denominators away from 0.
				c := g.model.Initializers[len(g.model.Initializers)-1].Data
				for i := range c {
					c[i] = float32(math.Copysign(0.5+math.Abs(float64(c[i])), float64(c[i])))
				}
			}
		}
		o, ok := broadcast(s, ys)
		if !ok {
			o = s
		}
		ins := []string{x, y}
		if src.intn(2) == 0 && name != "Div" {
			// (Never for Div: the denominator stays the constant kept away from 0. An empty
			// constant numerator followed by a Mul also crashes ONNX Runtime 1.24's own
			// DivMulFusion, which reads the constant's first value.)
			ins = []string{y, x}
		}
		g.node(name, ins, [][]int64{o})
	case 4: // Relu, Tanh, Sigmoid
		g.node([]string{"Relu", "Tanh", "Sigmoid"}[src.intn(3)], []string{x}, [][]int64{s})
	case 5: // Softmax
		g.node("Softmax", []string{x}, [][]int64{s}, onnxtest.IntAttr("axis", g.axis(r)))
	case 6: // Reshape
		n := numel(s)
		var shape []int64
		o := []int64{n}
		switch src.intn(8) {
		case 0:
			shape = []int64{-1}
		case 1:
			shape = []int64{n}
		case 2:
			if r > 0 {
				shape, o = []int64{0, -1}, []int64{s[0], 0}
				if s[0] != 0 {
					o[1] = n / s[0]
				}
			} else {
				shape = []int64{1, -1, 1}
				o = []int64{1, n, 1}
			}
		case 3:
			shape = []int64{1, -1, 1}
			o = []int64{1, n, 1}
		case 4:
			for a := int64(5); a >= 1; a-- {
				if n%a == 0 || n == 0 {
					shape, o = []int64{a, -1}, []int64{a, 0}
					if a != 0 {
						o[1] = n / a
					}
					break
				}
			}
		case 5:
			shape = []int64{n + 1}
		case 6:
			// (Not [2^32, 2^32] of an empty input: its product wraps to 0 in the CPU provider's
			// Reshape too, which accepts it, and a MatMul with K = 0 downstream then asks for
			// 2^32 rows of zeros.)
			bad := [][]int64{{-1, -1}, {-2, n}, {1<<62 + 1, 4}, {math.MaxInt64}, {0, 0, 0, 0, 0}}
			shape = bad[src.intn(len(bad))]
		case 7:
			shape = slices.Clone(s)
			o = slices.Clone(s)
		}
		var attrs []onnxtest.Attr
		if src.rare(8) {
			attrs = append(attrs, onnxtest.IntAttr("allowzero", 1))
		}
		g.node("Reshape", []string{x, g.int64s(nil, shape...)}, [][]int64{o}, attrs...)
	case 7: // Transpose
		perm := make([]int64, r)
		for i := range perm {
			perm[i] = int64(i)
		}
		g.rng.Shuffle(r, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		if r > 0 && src.rare(16) {
			perm[0] = int64(r)
		}
		o := make([]int64, r)
		for i := range o {
			o[i] = s[norm(perm[i], r)]
		}
		if src.intn(4) == 0 {
			for i := range o {
				o[i] = s[r-1-i]
			}
			g.node("Transpose", []string{x}, [][]int64{o})
		} else {
			g.node("Transpose", []string{x}, [][]int64{o}, onnxtest.IntsAttr("perm", perm...))
		}
	case 8: // Concat
		if r == 0 {
			return false
		}
		ax := g.axis(r)
		a := norm(ax, r)
		ins := []string{x}
		o := slices.Clone(s)
		for k := 1 + src.intn(2); k > 0; k-- {
			if src.intn(2) == 0 {
				ins = append(ins, x)
				o[a] += s[a]
				continue
			}
			cs := slices.Clone(s)
			cs[a] = int64(src.intn(3))
			if src.rare(16) && (numel(s) > 0 || cs[a] == 0) {
				// Shapes that differ outside the axis: invalid, except that the CPU provider
				// accepts an empty input (and adds rows of undefined values for its axis).
				cs[(a+1)%r]++
			}
			ins = append(ins, g.floats(cs))
			o[a] += cs[a]
		}
		g.node("Concat", ins, [][]int64{o}, onnxtest.IntAttr("axis", ax))
	case 9, 10: // Slice
		if r == 0 {
			return false
		}
		k := 1 + src.intn(r)
		var starts, ends, axes, steps []int64
		o := slices.Clone(s)
		stepChoices := []int64{1, 1, 1, 2, -1, -2, 3, math.MaxInt64, math.MinInt64, -3}
		withAxes, withSteps := src.intn(4) > 0, src.intn(3) > 0
		for i := 0; i < k; i++ {
			ax := int64(i) // the default axes
			if withAxes {
				ax = g.axis(r)
				if i > 0 && src.rare(16) {
					ax = axes[0]
				}
			}
			a := norm(ax, r)
			st := int64(1)
			if withSteps {
				st = stepChoices[src.intn(len(stepChoices))]
			}
			b, e := g.index(s[a]), g.index(s[a])
			if src.intn(4) == 0 {
				e = math.MaxInt64
				if st < 0 {
					e = math.MinInt64
				}
			}
			starts, ends, axes, steps = append(starts, b), append(ends, e), append(axes, ax), append(steps, st)
			o[a] = sliceLen(s[a], b, e, st)
		}
		ins := []string{x, g.int64s(nil, starts...), g.int64s(nil, ends...)}
		if withAxes {
			ins = append(ins, g.int64s(nil, axes...))
			if withSteps {
				ins = append(ins, g.int64s(nil, steps...))
			}
		}
		g.node("Slice", ins, [][]int64{o})
	case 11: // Gather
		if r == 0 {
			return false
		}
		ax := g.axis(r)
		a := norm(ax, r)
		ir := src.intn(3)
		idims := make([]int64, ir)
		for i := range idims {
			idims[i] = int64(src.intn(3))
		}
		idx := make([]int64, numel(idims))
		for i := range idx {
			idx[i] = g.index(s[a])
		}
		o := slices.Concat(s[:a], idims, s[a+1:])
		g.node("Gather", []string{x, g.int64s(idims, idx...)}, [][]int64{o}, onnxtest.IntAttr("axis", ax))
	case 12: // Split
		if r == 0 {
			return false
		}
		ax := g.axis(r)
		a := norm(ax, r)
		k := 1 + src.intn(3)
		outs := make([][]int64, k)
		ins := []string{x}
		sizes := make([]int64, k)
		if src.intn(2) == 0 {
			left := s[a]
			for i := 0; i < k-1; i++ {
				sizes[i] = int64(src.intn(int(left) + 1))
				left -= sizes[i]
			}
			sizes[k-1] = left
			if src.rare(12) {
				sizes[0]--
			}
			ins = append(ins, g.int64s(nil, sizes...))
		} else {
			for i := range sizes {
				sizes[i] = s[a] / int64(k)
			}
		}
		for i := range outs {
			outs[i] = slices.Clone(s)
			outs[i][a] = sizes[i]
		}
		g.node("Split", ins, outs, onnxtest.IntAttr("axis", ax))
	case 13: // Squeeze
		var axes []int64
		var o []int64
		for i, d := range s {
			if d == 1 && src.intn(2) == 0 {
				axes = append(axes, int64(i))
			} else {
				o = append(o, d)
			}
		}
		if src.rare(8) {
			axes = append(axes, g.axis(r))
		}
		if len(axes) == 0 {
			// No axes input: an empty one makes the CPU provider's Squeeze disagree with the
			// shape inference (and abort in a Concat downstream).
			o = nil
			for _, d := range s {
				if d != 1 {
					o = append(o, d)
				}
			}
			g.node("Squeeze", []string{x}, [][]int64{o})
			return false
		}
		g.node("Squeeze", []string{x, g.int64s(nil, axes...)}, [][]int64{o})
	case 14: // Unsqueeze
		k := 1 + src.intn(2)
		axes := make([]int64, k)
		for i := range axes {
			axes[i] = g.axis(r + k)
		}
		o := slices.Clone(s)
		for range axes {
			o = append(o, 1)
		}
		g.node("Unsqueeze", []string{x, g.int64s(nil, axes...)}, [][]int64{o})
	case 15: // Flatten
		a := src.intn(r + 1)
		g.node("Flatten", []string{x}, [][]int64{{numel(s[:a]), numel(s[a:])}}, onnxtest.IntAttr("axis", int64(a)))
	}
	return false
}

// sliceLen is the length Slice takes of a dimension (ONNX's clamping), for the generator's
// shape tracking.
func sliceLen(dim, b, e, st int64) int64 {
	if dim == 0 || st == 0 {
		return 0
	}
	if b < 0 {
		b += dim
	}
	switch {
	case e == math.MaxInt32 || e == math.MaxInt64:
		e = dim
		if st < 0 {
			e = -1
		}
	case e < 0:
		e += dim
	}
	if st > 0 {
		b, e = min(max(b, 0), dim), min(max(e, 0), dim)
		if e <= b {
			return 0
		}
		return (e-b-1)/st + 1
	}
	b, e = min(max(b, 0), dim-1), min(max(e, -1), dim-1)
	if b <= e {
		return 0
	}
	return int64(uint64(b-e-1)/(0-uint64(st))) + 1
}
