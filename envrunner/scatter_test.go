package envrunner

import (
	"slices"
	"testing"
)

// TestScatter: scatter writes row i of src at i*stride of dst, for every width (the ones it
// writes as arrays, the rest, and rows of no values), and nothing else of dst; gather reads
// them back.
func TestScatter(t *testing.T) {
	for _, w := range []int{0, 1, 2, 3, 4, 5} {
		for _, n := range []int{0, 1, 7} {
			stride := w + 3
			src := make([]float32, n*w)
			for i := range src {
				src[i] = float32(i + 1)
			}
			dst := make([]float32, n*stride+1)
			want := slices.Clone(dst)
			for i := range n {
				copy(want[i*stride:], src[i*w:(i+1)*w])
			}
			scatter(dst, src, stride, w, n)
			if !slices.Equal(dst, want) {
				t.Fatalf("w %d n %d: scatter wrote %v, want %v", w, n, dst, want)
			}
			if back := gather(nil, dst, stride, 0, w, n); !slices.Equal(back, src) {
				t.Fatalf("w %d n %d: gather read back %v, want %v", w, n, back, src)
			}
		}
	}
}
