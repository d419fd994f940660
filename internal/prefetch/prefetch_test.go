package prefetch

import "testing"

// Prefetching is a hint with no effect a program can observe; what can go wrong is the
// arithmetic of the range, so the test is that no slice (every length up to a few lines, at
// every offset within a line, the empty and nil ones) panics or changes a value.
func TestFloat32sLengths(t *testing.T) {
	buf := make([]float32, 200)
	for i := range buf {
		buf[i] = float32(i)
	}
	Float32s(nil)
	Float32s(buf[:0])
	for off := range 16 {
		for n := range 64 {
			Float32s(buf[off : off+n])
		}
	}
	for i, v := range buf {
		if v != float32(i) {
			t.Fatalf("buf[%d] = %v", i, v)
		}
	}
}

// BenchmarkFloat32s prefetches one of 256 trajectories of 8 KB (a fragment's rows of an
// agent), in turn, as cut does.
func BenchmarkFloat32s(b *testing.B) {
	trs := make([][]float32, 256)
	for i := range trs {
		trs[i] = make([]float32, 2000)
	}
	for i := range b.N {
		Float32s(trs[i%len(trs)])
	}
}
