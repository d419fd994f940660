package spaces

import (
	"math/rand/v2"
	"testing"
)

// benchSpace is a typical observation space: an 84x84 image plus a few vector and
// discrete parts.
func benchSpace() Space {
	return NewDict(map[string]Space{
		"image": &Box{Low: make([]float32, 84*84), High: filled(84*84, 255), Shape: []int{84, 84}, Dtype: "uint8"},
		"state": NewBox(negInf, inf, 8),
		"extra": &Tuple{Spaces: []Space{&Discrete{N: 5}, &MultiDiscrete{Nvec: []int64{3, 4, 5}}, &MultiBinary{N: 4}}},
	})
}

func filled(n int, v float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func BenchmarkSpace(b *testing.B) {
	for _, bc := range []struct {
		name string
		s    Space
	}{
		{"box=4", NewBox(-1, 1, 4)},
		{"discrete=8", &Discrete{N: 8}},
		{"multidiscrete=3x5", &MultiDiscrete{Nvec: []int64{5, 5, 5}}},
		{"dict=image+state+tuple", benchSpace()},
	} {
		rng := rand.New(rand.NewPCG(1, 2))
		raw := make([]float32, bc.s.Size())
		flat := make([]float32, bc.s.FlatDim())
		bc.s.Sample(rng, raw)
		b.Run(bc.name+"/Sample", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.s.Sample(rng, raw)
			}
		})
		b.Run(bc.name+"/Flatten", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.s.Flatten(flat, raw)
			}
		})
		b.Run(bc.name+"/Contains", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !bc.s.Contains(raw) {
					b.Fatal("sample not contained")
				}
			}
		})
	}
}
