package env

import (
	"math"
	"testing"

	"github.com/onnxrl/sampler/spaces"
)

// badDiscrete is Discrete.Contains over a column: it must decide every value as Contains
// does, and report the first bad one.
func TestBadDiscreteMatchesContains(t *testing.T) {
	values := []float32{0, 1, 2, 3, -1, -2, 0.5, -0.5, 1.0000001, 2.9999998,
		float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		1 << 24, -(1 << 24), 1 << 62, -(1 << 62), 1 << 63, -(1 << 63), math.MaxFloat32, -math.MaxFloat32}
	for _, d := range []spaces.Discrete{{N: 2}, {N: 3, Start: -1}, {N: 1, Start: 2}, {N: 1 << 40, Start: -(1 << 39)}} {
		for _, v := range values {
			want := -1
			if !d.Contains([]float32{v}) {
				want = 0
			}
			if got := badDiscrete([]float32{v}, d.Start, d.N); got != want {
				t.Errorf("Discrete{N: %d, Start: %d}, action %v: badDiscrete says %d, Contains says %v", d.N, d.Start, v, got, want < 0)
			}
			col := []float32{float32(d.Start), float32(d.Start), v, float32(d.Start)}
			if want >= 0 {
				want = 2
			}
			if got := badDiscrete(col, d.Start, d.N); got != want {
				t.Errorf("Discrete{N: %d, Start: %d}, column %v: badDiscrete says %d, want %d", d.N, d.Start, col, got, want)
			}
		}
	}
}
