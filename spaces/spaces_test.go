package spaces

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	inf    = float32(math.Inf(1))
	negInf = float32(math.Inf(-1))
	nan    = float32(math.NaN())
)

// nested is Dict(m: Discrete(3, start=1), z: Tuple(Discrete(2), MultiBinary(2))), built from
// an unsorted map.
func nested() *Dict {
	return NewDict(map[string]Space{
		"z": &Tuple{Spaces: []Space{&Discrete{N: 2}, &MultiBinary{N: 2}}},
		"m": &Discrete{N: 3, Start: 1},
	})
}

func TestSizeFlatDim(t *testing.T) {
	tests := []struct {
		name          string
		s             Space
		typ           string
		size, flatDim int
	}{
		{"box scalar", NewBox(0, 1), "Box", 1, 1},
		{"box 3", NewBox(-1, 1, 3), "Box", 3, 3},
		{"box 2x3x4", NewBox(0, 255, 2, 3, 4), "Box", 24, 24},
		{"discrete", &Discrete{N: 5}, "Discrete", 1, 5},
		{"discrete start", &Discrete{N: 3, Start: -1}, "Discrete", 1, 3},
		{"multidiscrete", &MultiDiscrete{Nvec: []int64{3, 2, 4}}, "MultiDiscrete", 3, 9},
		{"multibinary", &MultiBinary{N: 7}, "MultiBinary", 7, 7},
		{"tuple", &Tuple{Spaces: []Space{&Discrete{N: 2}, NewBox(0, 1, 2, 2)}}, "Tuple", 5, 6},
		{"empty tuple", &Tuple{}, "Tuple", 0, 0},
		{"dict", nested(), "Dict", 4, 7},
		{"empty dict", NewDict(nil), "Dict", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.s.Validate())
			assert.Equal(t, tt.typ, tt.s.Type())
			assert.Equal(t, tt.size, tt.s.Size())
			assert.Equal(t, tt.flatDim, tt.s.FlatDim())
		})
	}
}

func TestNewDictSortsKeys(t *testing.T) {
	d := nested()
	assert.Equal(t, []string{"m", "z"}, d.Keys)
	assert.Equal(t, "Discrete", d.Spaces[0].Type())
	assert.Equal(t, "Tuple", d.Spaces[1].Type())
}

func TestNewBox(t *testing.T) {
	b := NewBox(-2, 3, 2, 2)
	assert.Equal(t, []float32{-2, -2, -2, -2}, b.Low)
	assert.Equal(t, []float32{3, 3, 3, 3}, b.High)
	assert.Equal(t, []int{2, 2}, b.Shape)
	assert.Equal(t, "float32", b.Dtype)

	s := NewBox(0, 1)
	assert.Equal(t, []int{}, s.Shape)
	assert.Equal(t, 1, s.Size())

	bb := NewBoxBounds([]float32{0, -1}, []float32{1, 2})
	assert.Equal(t, []int{2}, bb.Shape)
	assert.Equal(t, []float32{0, -1}, bb.Low)

	assert.Panics(t, func() { NewBoxBounds([]float32{0}, []float32{1, 2}) })
	assert.Panics(t, func() { NewBoxBounds([]float32{0, 0}, []float32{1, 2}, 3) })
	assert.Panics(t, func() { NewBox(0, 1, -1) })
}

func TestFlatten(t *testing.T) {
	tests := []struct {
		name string
		s    Space
		x    []float32
		want []float32
	}{
		{"box copied", NewBox(-1, 1, 2, 2), []float32{0.5, -0.5, 1, -1}, []float32{0.5, -0.5, 1, -1}},
		{"discrete one-hot", &Discrete{N: 4}, []float32{2}, []float32{0, 0, 1, 0}},
		{"discrete start", &Discrete{N: 3, Start: -1}, []float32{0}, []float32{0, 1, 0}},
		{"discrete start first", &Discrete{N: 3, Start: 5}, []float32{5}, []float32{1, 0, 0}},
		{"multidiscrete concatenated one-hots", &MultiDiscrete{Nvec: []int64{3, 2, 4}}, []float32{2, 0, 3},
			[]float32{0, 0, 1, 1, 0, 0, 0, 0, 1}},
		{"multibinary copied", &MultiBinary{N: 3}, []float32{1, 0, 1}, []float32{1, 0, 1}},
		{"tuple in order", &Tuple{Spaces: []Space{&Discrete{N: 2}, &MultiDiscrete{Nvec: []int64{2, 2}}}},
			[]float32{1, 0, 1}, []float32{0, 1, 1, 0, 0, 1}},
		{"dict sorted keys", NewDict(map[string]Space{"b": &Discrete{N: 2}, "a": NewBox(-1, 1, 2)}),
			[]float32{0.5, -0.5, 1}, []float32{0.5, -0.5, 0, 1}},
		// m = 3 (index 2 of start 1), z = (0, [1, 1]).
		{"nested dict tuple", nested(), []float32{3, 0, 1, 1}, []float32{0, 0, 1, 1, 0, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.True(t, tt.s.Contains(tt.x))
			dst := make([]float32, tt.s.FlatDim())
			for i := range dst {
				dst[i] = 9 // Flatten must overwrite everything
			}
			got := tt.s.Flatten(dst, tt.x)
			assert.Equal(t, tt.want, got)
			assert.Same(t, &dst[0], &got[0], "Flatten returns dst")
		})
	}
}

func TestBufferLengthPanics(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range []Space{NewBox(0, 1, 2), &Discrete{N: 3}, &MultiDiscrete{Nvec: []int64{2}}, &MultiBinary{N: 2}, nested()} {
		assert.Panics(t, func() { s.Sample(rng, make([]float32, s.Size()+1)) }, String(s))
		assert.Panics(t, func() { s.Flatten(make([]float32, s.FlatDim()+1), make([]float32, s.Size())) }, String(s))
		assert.Panics(t, func() { s.Flatten(make([]float32, s.FlatDim()), make([]float32, s.Size()+1)) }, String(s))
	}
}

func TestContains(t *testing.T) {
	tests := []struct {
		name string
		s    Space
		x    []float32
		want bool
	}{
		{"box inside", NewBox(-1, 1, 2), []float32{-1, 1}, true},
		{"box wrong length", NewBox(-1, 1, 2), []float32{0}, false},
		{"box above", NewBox(-1, 1, 2), []float32{0, 1.0001}, false},
		{"box below", NewBox(-1, 1, 2), []float32{-2, 0}, false},
		{"box NaN", NewBox(-1, 1, 2), []float32{nan, 0}, false},
		{"box NaN unbounded", NewBox(negInf, inf, 1), []float32{nan}, false},
		{"box inf unbounded", NewBox(negInf, inf, 2), []float32{inf, negInf}, true},
		{"box inf bounded", NewBox(-1, 1), []float32{inf}, false},
		{"box per element", NewBoxBounds([]float32{0, 10}, []float32{1, 20}), []float32{1, 10}, true},
		{"box per element out", NewBoxBounds([]float32{0, 10}, []float32{1, 20}), []float32{5, 5}, false},
		{"box int integral", &Box{Low: []float32{0}, High: []float32{10}, Dtype: "int32"}, []float32{3}, true},
		{"box int fractional", &Box{Low: []float32{0}, High: []float32{10}, Dtype: "int32"}, []float32{3.5}, false},
		{"box uint8 unbounded below", &Box{Low: []float32{negInf}, High: []float32{10}, Dtype: "uint8"}, []float32{-1}, false},
		{"box int8 dtype range", &Box{Low: []float32{negInf}, High: []float32{inf}, Dtype: "int8"}, []float32{128}, false},
		{"box int8 dtype max", &Box{Low: []float32{negInf}, High: []float32{inf}, Dtype: "int8"}, []float32{127}, true},
		{"discrete first", &Discrete{N: 3, Start: -1}, []float32{-1}, true},
		{"discrete last", &Discrete{N: 3, Start: -1}, []float32{1}, true},
		{"discrete past end", &Discrete{N: 3, Start: -1}, []float32{2}, false},
		{"discrete before start", &Discrete{N: 3, Start: -1}, []float32{-2}, false},
		{"discrete fractional", &Discrete{N: 3}, []float32{0.5}, false},
		{"discrete NaN", &Discrete{N: 3}, []float32{nan}, false},
		{"discrete wrong length", &Discrete{N: 3}, []float32{0, 0}, false},
		{"multidiscrete inside", &MultiDiscrete{Nvec: []int64{2, 3}}, []float32{1, 2}, true},
		{"multidiscrete out", &MultiDiscrete{Nvec: []int64{2, 3}}, []float32{2, 0}, false},
		{"multidiscrete negative", &MultiDiscrete{Nvec: []int64{2, 3}}, []float32{0, -1}, false},
		{"multidiscrete fractional", &MultiDiscrete{Nvec: []int64{2, 3}}, []float32{0, 1.5}, false},
		{"multibinary", &MultiBinary{N: 3}, []float32{0, 1, 1}, true},
		{"multibinary half", &MultiBinary{N: 3}, []float32{0, 0.5, 1}, false},
		{"multibinary two", &MultiBinary{N: 3}, []float32{0, 2, 1}, false},
		{"multibinary NaN", &MultiBinary{N: 1}, []float32{nan}, false},
		{"dict", nested(), []float32{3, 1, 0, 1}, true},
		{"dict first child out", nested(), []float32{0, 1, 0, 1}, false},
		{"dict second child out", nested(), []float32{1, 1, 0, 2}, false},
		{"dict too long", nested(), []float32{1, 1, 0, 1, 0}, false},
		{"dict too short", nested(), []float32{1, 1, 0}, false},
		{"empty tuple", &Tuple{}, []float32{}, true},
		{"empty tuple non-empty x", &Tuple{}, []float32{0}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.s.Validate())
			assert.Equal(t, tt.want, tt.s.Contains(tt.x))
		})
	}
}

// sampleSpaces covers every kind and every Box sampling branch.
func sampleSpaces() map[string]Space {
	return map[string]Space{
		"box bounded":        NewBox(-1, 3, 2, 3),
		"box unbounded":      NewBox(negInf, inf, 4),
		"box lower only":     NewBox(2, inf, 4),
		"box upper only":     NewBox(negInf, -1, 4),
		"box mixed":          NewBoxBounds([]float32{negInf, 0, negInf, 5}, []float32{inf, inf, 0, 5}),
		"box point":          NewBox(0.25, 0.25, 3),
		"box huge":           NewBox(-math.MaxFloat32, math.MaxFloat32, 3),
		"box float64":        &Box{Low: []float32{-1, -2}, High: []float32{1, 2}, Shape: []int{2}, Dtype: "float64"},
		"box uint8":          &Box{Low: []float32{0, 0}, High: []float32{255, 1}, Shape: []int{2}, Dtype: "uint8"},
		"box int32":          &Box{Low: []float32{-3, math.MinInt32}, High: []float32{3, math.MaxInt32}, Shape: []int{2}, Dtype: "int32"},
		"box int8 unbounded": &Box{Low: []float32{negInf, negInf, 120}, High: []float32{inf, -120, inf}, Shape: []int{3}, Dtype: "int8"},
		"box uint8 inf":      &Box{Low: []float32{negInf, 250}, High: []float32{3, inf}, Shape: []int{2}, Dtype: "uint8"},
		"box int64 inf":      &Box{Low: []float32{negInf}, High: []float32{inf}, Shape: []int{1}, Dtype: "int64"},
		"discrete":           &Discrete{N: 5, Start: -2},
		"discrete one":       &Discrete{N: 1, Start: 7},
		"multidiscrete":      &MultiDiscrete{Nvec: []int64{1, 2, 10}},
		"multibinary":        &MultiBinary{N: 6},
		"nested":             nested(),
		"tuple":              &Tuple{Spaces: []Space{NewBox(negInf, 0, 2), nested(), &Tuple{}}},
	}
}

func TestSampleContained(t *testing.T) {
	for name, s := range sampleSpaces() {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, s.Validate())
			dst := make([]float32, s.Size())
			for seed := uint64(1); seed <= 5; seed++ {
				rng := rand.New(rand.NewPCG(seed, 99))
				for range 2000 {
					got := s.Sample(rng, dst)
					require.True(t, s.Contains(got), "seed %d: %v not in %s", seed, got, String(s))
				}
			}
		})
	}
}

func TestSampleReproducible(t *testing.T) {
	for name, s := range sampleSpaces() {
		t.Run(name, func(t *testing.T) {
			draw := func(seed uint64) [][]float32 {
				rng := rand.New(rand.NewPCG(seed, 7))
				var out [][]float32
				for range 50 {
					out = append(out, s.Sample(rng, make([]float32, s.Size())))
				}
				return out
			}
			assert.Equal(t, draw(3), draw(3))
			if s.Size() > 0 && name != "box point" && name != "discrete one" && name != "multidiscrete" {
				assert.NotEqual(t, draw(3), draw(4))
			}
		})
	}
}

func TestSampleStatistics(t *testing.T) {
	const draws = 100000
	rng := rand.New(rand.NewPCG(42, 1))

	t.Run("discrete uniform", func(t *testing.T) {
		d := &Discrete{N: 5, Start: 2}
		counts := map[float32]int{}
		dst := make([]float32, 1)
		for range draws {
			counts[d.Sample(rng, dst)[0]]++
		}
		require.Len(t, counts, 5)
		for v := float32(2); v <= 6; v++ {
			assert.InDelta(t, 0.2, float64(counts[v])/draws, 0.01, "value %v", v)
		}
	})
	t.Run("box int includes high", func(t *testing.T) {
		b := &Box{Low: []float32{0}, High: []float32{3}, Dtype: "uint8"}
		counts := map[float32]int{}
		dst := make([]float32, 1)
		for range draws {
			counts[b.Sample(rng, dst)[0]]++
		}
		require.Len(t, counts, 4)
		for v := float32(0); v <= 3; v++ {
			assert.InDelta(t, 0.25, float64(counts[v])/draws, 0.01, "value %v", v)
		}
	})
	t.Run("multibinary fair", func(t *testing.T) {
		m := &MultiBinary{N: 4}
		dst := make([]float32, 4)
		ones := 0.0
		for range draws {
			for _, v := range m.Sample(rng, dst) {
				ones += float64(v)
			}
		}
		assert.InDelta(t, 0.5, ones/(4*draws), 0.01)
	})
	moments := func(b *Box) (mean, variance float64) {
		dst := make([]float32, 1)
		var sum, sq float64
		for range draws {
			v := float64(b.Sample(rng, dst)[0])
			sum += v
			sq += v * v
		}
		mean = sum / draws
		return mean, sq/draws - mean*mean
	}
	for _, tt := range []struct {
		name       string
		box        *Box
		mean, vari float64
	}{
		{"box uniform", NewBox(-1, 3), 1, 16.0 / 12},
		{"box normal", NewBox(negInf, inf), 0, 1},
		{"box low + exponential", NewBox(2, inf), 3, 1},
		{"box high - exponential", NewBox(negInf, -1), -2, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mean, vari := moments(tt.box)
			assert.InDelta(t, tt.mean, mean, 0.02)
			assert.InDelta(t, tt.vari, vari, 0.05)
		})
	}
}

func TestValidateErrors(t *testing.T) {
	tests := []struct {
		name string
		s    Space
		want string
	}{
		{"discrete n", &Discrete{N: 0}, "spaces: Discrete.n: must be positive, got 0"},
		{"discrete too big", &Discrete{N: MaxElements + 1}, "spaces: Discrete.n: 16777217 exceeds the limit of 16777216"},
		{"discrete start", &Discrete{N: 2, Start: MaxElements}, "spaces: Discrete.start:"},
		{"multidiscrete empty", &MultiDiscrete{}, "spaces: MultiDiscrete.nvec: must not be empty"},
		{"multidiscrete entry", &MultiDiscrete{Nvec: []int64{2, -1}}, "spaces: MultiDiscrete.nvec[1]: must be positive, got -1"},
		{"multibinary", &MultiBinary{N: -3}, "spaces: MultiBinary.n: must be positive, got -3"},
		{"box dtype", &Box{Low: []float32{0}, High: []float32{1}, Dtype: "float17"}, `spaces: Box.dtype: unknown dtype "float17"`},
		{"box shape", &Box{Low: []float32{0}, High: []float32{1}, Shape: []int{1, 0}}, "spaces: Box.shape[1]: must be positive, got 0"},
		{"box low length", &Box{Low: []float32{0}, High: []float32{1, 1}, Shape: []int{2}}, "spaces: Box.low: has 1 elements, want 2 for shape (2,)"},
		{"box high length", &Box{Low: []float32{0}, High: nil}, "spaces: Box.high: has 0 elements, want 1 for shape ()"},
		{"box low > high", NewBoxBounds([]float32{0, 2}, []float32{1, 1}), "spaces: Box.low[1]: 2.0 is greater than high 1.0"},
		{"box NaN low", NewBoxBounds([]float32{0, nan}, []float32{1, 1}), "spaces: Box.low[1]: is NaN"},
		{"box NaN high", NewBoxBounds([]float32{0, 0}, []float32{nan, 1}), "spaces: Box.high[0]: is NaN"},
		{"box int fractional", &Box{Low: []float32{0.5}, High: []float32{1}, Dtype: "int32"}, "spaces: Box.low[0]: must be an integer for dtype int32, got 0.5"},
		{"box uint8 range", &Box{Low: []float32{-1}, High: []float32{1}, Dtype: "uint8"}, "spaces: Box.low[0]: -1.0 is out of range for dtype uint8"},
		{"box int +inf low", &Box{Low: []float32{inf}, High: []float32{inf}, Dtype: "int16"}, "spaces: Box.low[0]: inf is not allowed for dtype int16"},
		{"box too big", &Box{Shape: []int{1 << 12, 1 << 12, 2}}, "spaces: Box.shape: (4096, 4096, 2) has more than 16777216 elements"},
		{"dict keys count", &Dict{Keys: []string{"a"}}, "spaces: Dict.keys: 1 keys for 0 spaces"},
		{"dict unsorted", &Dict{Keys: []string{"b", "a"}, Spaces: []Space{&MultiBinary{N: 1}, &MultiBinary{N: 1}}}, `spaces: Dict.keys[1]: "a" does not come after "b"`},
		{"dict duplicate", &Dict{Keys: []string{"a", "a"}, Spaces: []Space{&MultiBinary{N: 1}, &MultiBinary{N: 1}}}, `spaces: Dict.keys[1]: "a" does not come after "a"`},
		{"dict invalid utf8", &Dict{Keys: []string{"\xff"}, Spaces: []Space{&MultiBinary{N: 1}}}, `spaces: Dict.keys[0]: "\xff" is not valid UTF-8`},
		{"dict nil child", &Dict{Keys: []string{"a"}, Spaces: []Space{nil}}, `spaces: Dict.spaces["a"]: nil space`},
		{"dict typed nil child", &Dict{Keys: []string{"a"}, Spaces: []Space{(*Box)(nil)}}, `spaces: Dict.spaces["a"]: nil space`},
		{"dict nested", NewDict(map[string]Space{"pos": &Tuple{Spaces: []Space{&Discrete{N: 2}, &Box{Low: []float32{0}, High: []float32{1}, Shape: []int{1, -2}}}}}),
			`spaces: Dict.spaces["pos"].spaces[1].shape[1]: must be positive, got -2`},
		{"tuple child", &Tuple{Spaces: []Space{&Discrete{N: 2}, &MultiDiscrete{Nvec: []int64{0}}}}, "spaces: Tuple.spaces[1].nvec[0]: must be positive, got 0"},
		{"tuple total too big", &Tuple{Spaces: []Space{&Discrete{N: MaxElements}, &Discrete{N: 1}}}, "spaces: Tuple: size exceeds the limit of 16777216"},
		{"too deep", deepTuple(MaxDepth + 1), "nesting deeper than 32 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			var fe *FieldError
			assert.ErrorAs(t, err, &fe)
			_, merr := tt.s.MarshalJSON()
			assert.Error(t, merr, "MarshalJSON of an invalid space")
		})
	}
	assert.NoError(t, deepTuple(MaxDepth).Validate())
}

// deepTuple nests n Tuples around a Discrete(2).
func deepTuple(n int) Space {
	var s Space = &Discrete{N: 2}
	for range n {
		s = &Tuple{Spaces: []Space{s}}
	}
	return s
}

func TestEqual(t *testing.T) {
	a := nested()
	assert.True(t, Equal(a, nested()))
	assert.True(t, Equal(nil, nil))
	assert.False(t, Equal(a, nil))
	assert.False(t, Equal(nil, a))
	assert.True(t, Equal(&Box{Low: []float32{0}, High: []float32{1}}, NewBox(0, 1)), "empty dtype is float32, nil shape is ()")
	assert.False(t, Equal(NewBox(0, 1, 2), NewBox(0, 1, 1, 2)))
	assert.False(t, Equal(NewBox(0, 1, 2), NewBox(0, 2, 2)))
	assert.False(t, Equal(NewBox(0, 1, 2), &Box{Low: []float32{0, 0}, High: []float32{1, 1}, Shape: []int{2}, Dtype: "float64"}))
	assert.False(t, Equal(&Discrete{N: 2}, &Discrete{N: 2, Start: 1}))
	assert.False(t, Equal(&Discrete{N: 2}, &MultiBinary{N: 2}))
	assert.False(t, Equal(&MultiDiscrete{Nvec: []int64{2}}, &MultiDiscrete{Nvec: []int64{2, 2}}))
	assert.False(t, Equal(&Tuple{Spaces: []Space{&Discrete{N: 2}}}, &Tuple{Spaces: []Space{&Discrete{N: 3}}}))
	assert.False(t, Equal(NewDict(map[string]Space{"a": &MultiBinary{N: 1}}), NewDict(map[string]Space{"b": &MultiBinary{N: 1}})))
	assert.False(t, Equal(&Tuple{}, NewDict(nil)))
	assert.True(t, Equal((*Box)(nil), (*Box)(nil)))
	assert.False(t, Equal((*Box)(nil), NewBox(0, 1)))
	assert.False(t, Equal(NewBox(0, 1), (*Box)(nil)))
	assert.True(t, Equal((*Discrete)(nil), (*Discrete)(nil)))
	assert.False(t, Equal((*Discrete)(nil), (*MultiBinary)(nil)), "typed nils of different types")
	assert.False(t, Equal(&MultiBinary{N: 2}, (*MultiBinary)(nil)))
	assert.True(t, Equal(&Box{Low: []float32{nan}, High: []float32{1}}, &Box{Low: []float32{nan}, High: []float32{1}}), "NaN bounds equal each other")
}

func TestString(t *testing.T) {
	tests := []struct {
		s    Space
		want string
	}{
		{NewBox(-1, 1, 3), "Box(-1.0, 1.0, (3,), float32)"},
		{NewBox(0, 255, 2, 3), "Box(0.0, 255.0, (2, 3), float32)"},
		{NewBox(negInf, inf), "Box(-inf, inf, (), float32)"},
		{NewBoxBounds([]float32{0, -1.5}, []float32{1, 1e9}), "Box([0.0 -1.5], [1.0 1000000000.0], (2,), float32)"},
		{&Box{Low: []float32{0}, High: []float32{1e20}, Shape: []int{1}, Dtype: "int64"}, "Box(0.0, 1e+20, (1,), int64)"},
		{&Discrete{N: 2}, "Discrete(2)"},
		{&Discrete{N: 3, Start: -1}, "Discrete(3, start=-1)"},
		{&MultiDiscrete{Nvec: []int64{3, 4}}, "MultiDiscrete([3 4])"},
		{&MultiBinary{N: 5}, "MultiBinary(5)"},
		{nested(), "Dict(m: Discrete(3, start=1), z: Tuple(Discrete(2), MultiBinary(2)))"},
		{&Tuple{}, "Tuple()"},
		{nil, "<nil>"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, String(tt.s))
	}
}

// TestNoAllocs checks the hot-path methods at 0 allocations (the benchmarks show the same).
func TestNoAllocs(t *testing.T) {
	s := benchSpace()
	rng := rand.New(rand.NewPCG(1, 2))
	raw := make([]float32, s.Size())
	flat := make([]float32, s.FlatDim())
	s.Sample(rng, raw)
	assert.Zero(t, testing.AllocsPerRun(100, func() { s.Sample(rng, raw) }), "Sample")
	assert.Zero(t, testing.AllocsPerRun(100, func() { s.Flatten(flat, raw) }), "Flatten")
	assert.Zero(t, testing.AllocsPerRun(100, func() { s.Contains(raw) }), "Contains")
}

// TestDiscreteContainsEdges checks Discrete.Contains on fractions, NaN, infinities, bounds
// and large magnitudes.
func TestDiscreteContainsEdges(t *testing.T) {
	d := &Discrete{N: 3, Start: -1}
	for _, c := range []struct {
		v    float32
		want bool
	}{{-1, true}, {0, true}, {1, true}, {2, false}, {-2, false}, {0.5, false}, {-0.5, false},
		{float32(math.NaN()), false}, {float32(math.Inf(1)), false}, {float32(math.Inf(-1)), false}} {
		if got := d.Contains([]float32{c.v}); got != c.want {
			t.Errorf("Discrete(3, start -1).Contains(%v) = %v", c.v, got)
		}
	}
	big := &Discrete{N: 1 << 40, Start: -(1 << 39)}
	for _, c := range []struct {
		v    float32
		want bool
	}{{1 << 30, true}, {-(1 << 30), true}, {1<<24 + 2, true}, {1<<22 + 0.5, false}, {1 << 40, false}} {
		if got := big.Contains([]float32{c.v}); got != c.want {
			t.Errorf("Discrete(2^40, start -2^39).Contains(%v) = %v", c.v, got)
		}
	}
	if d.Contains([]float32{0, 1}) || d.Contains(nil) {
		t.Error("Discrete.Contains accepted a wrong length")
	}
}

// TestDiscreteContainsReference compares Discrete.Contains with the plain definition on
// random float32 bit patterns and on values near the bounds.
func TestDiscreteContainsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, d := range []*Discrete{{N: 2}, {N: 3, Start: -1}, {N: 1000, Start: 5}, {N: 1 << 40, Start: -(1 << 39)}} {
		want := func(f float32) bool {
			v := float64(f)
			return v == math.Floor(v) && v >= float64(d.Start) && v < float64(d.Start)+float64(d.N)
		}
		check := func(f float32) {
			if got := d.Contains([]float32{f}); got != want(f) {
				t.Fatalf("Discrete(%d, start %d).Contains(%v) = %v", d.N, d.Start, f, got)
			}
		}
		for range 100000 {
			check(math.Float32frombits(rng.Uint32()))
		}
		for k := d.Start - 3; k < d.Start+3; k++ {
			for _, f := range []float32{float32(k), float32(k) + 0.5, float32(k+d.N) - 0.5, float32(k + d.N)} {
				check(f)
			}
		}
	}
}
