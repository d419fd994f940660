package prefetch

import "testing"

// Prefetching is a hint with no effect a program can observe; what can go wrong is an index
// check, so the test is that no index panics or changes the slice.
func TestFloat32Indices(t *testing.T) {
	s := make([]float32, 3, 40)
	for i := range s {
		s[i] = float32(i + 1)
	}
	for _, i := range []int{-1, 0, 2, 3, 39, 40, 1 << 40, -1 << 40} {
		Float32(s, i)
	}
	Float32(nil, 0)
	Float32([]float32{}, 0)
	if len(s) != 3 || cap(s) != 40 || s[0] != 1 || s[1] != 2 || s[2] != 3 {
		t.Fatalf("the slice changed: %v (cap %d)", s, cap(s))
	}
}

// TestFloat32sLengths: slices of every length up to a few lines, at every offset within a
// line, the empty and nil ones; none panics or changes the values.
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

func BenchmarkFloat32(b *testing.B) {
	s := make([]float32, 0, 1<<16)
	for i := range b.N {
		Float32(s, (i*16)&(1<<16-1))
	}
}
