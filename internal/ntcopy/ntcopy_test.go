package ntcopy

import (
	"fmt"
	"testing"
	"unsafe"
)

// TestStridedMatchesGo checks Strided against the plain loop for every width, row count up
// to a few lines, and starting offset within a line (so that the heads, whole lines and
// tails of every split are written), and that nothing past the rows changes.
func TestStridedMatchesGo(t *testing.T) {
	const stride = 11
	src := make([]float32, 100*stride)
	for i := range src {
		src[i] = float32(i) + 0.5
	}
	for _, w := range []int{0, 1, 2, 3, 4, 5, 6, 7, 10} { // 0: rows of no values, nothing written
		for off := range 16 {
			for n := range 70 {
				got, want := make([]float32, 64+n*w+16), make([]float32, 64+n*w+16)
				for i := range got {
					got[i], want[i] = -1, -1
				}
				Strided(got[off:], src, stride, w, n)
				StridedCached(want[off:], src, stride, w, n)
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("w=%d off=%d n=%d: dst[%d] = %v, want %v", w, off, n, i-off, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestStridedCachedMatchesLoop checks StridedCached against a copy a row for every width up
// to 18 (its array cases and the copy), and that nothing past the rows changes.
func TestStridedCachedMatchesLoop(t *testing.T) {
	const stride = 19
	src := make([]float32, 40*stride)
	for i := range src {
		src[i] = float32(i) + 0.5
	}
	for w := range 19 {
		for n := range 40 {
			got, want := make([]float32, n*w+8), make([]float32, n*w+8)
			for i := range got {
				got[i], want[i] = -1, -1
			}
			StridedCached(got, src, stride, w, n)
			for i := range n {
				copy(want[i*w:(i+1)*w], src[i*stride:])
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("w=%d n=%d: dst[%d] = %v, want %v", w, n, i, got[i], want[i])
				}
			}
		}
	}
}

// TestFillMatchesGo checks Fill32 and Fill64 against the plain loop at every length up to a
// few lines and every offset within a line.
func TestFillMatchesGo(t *testing.T) {
	for off := range 16 {
		for n := range 70 {
			a := make([]int32, 96)
			Fill32(a[off:off+n], 7)
			b := make([]int64, 80)
			Fill64(b[off%8:off%8+n], -3)
			for i := range a {
				if want := int32(0); i >= off && i < off+n && a[i] != 7 || (i < off || i >= off+n) && a[i] != want {
					t.Fatalf("Fill32 off=%d n=%d: a[%d] = %d", off, n, i, a[i])
				}
			}
			for i := range b {
				in := i >= off%8 && i < off%8+n
				if in && b[i] != -3 || !in && b[i] != 0 {
					t.Fatalf("Fill64 off=%d n=%d: b[%d] = %d", off%8, n, i, b[i])
				}
			}
		}
	}
}

// TestFill8AndIota32 checks Fill8 and Iota32 against the plain loops at every length up to
// a few lines and every offset within a line.
func TestFill8AndIota32(t *testing.T) {
	for off := range 64 {
		for n := range 200 {
			a, want := make([]bool, 300), make([]bool, 300)
			Fill8(a[off:off+n], true)
			fillGo(want[off:off+n], true)
			if fmt.Sprint(a) != fmt.Sprint(want) {
				t.Fatalf("Fill8 off=%d n=%d: %v", off, n, a)
			}
			if off >= 16 || n >= 70 {
				continue
			}
			b, wantB := make([]int32, 96), make([]int32, 96)
			Iota32(b[off:off+n], 5)
			iotaGo(wantB[off:off+n], 5)
			if fmt.Sprint(b) != fmt.Sprint(wantB) {
				t.Fatalf("Iota32 off=%d n=%d: %v, want %v", off, n, b, wantB)
			}
		}
	}
}

// TestLineKernelsMatchGo runs the line kernels (the assembly on amd64) and their Go
// references on the same aligned lines.
func TestLineKernelsMatchGo(t *testing.T) {
	const stride = 5
	src := make([]float32, 64*stride*4)
	for i := range src {
		src[i] = float32(i)
	}
	for _, w := range []uintptr{1, 2, 4} {
		for lines := uintptr(1); lines <= 4; lines++ {
			got, want := aligned(int(lines)*16), aligned(int(lines)*16)
			stridedLines(unsafe.Pointer(&got[0]), unsafe.Pointer(&src[0]), stride*4, w, lines)
			stridedLinesGo(unsafe.Pointer(&want[0]), unsafe.Pointer(&src[0]), stride*4, w, lines)
			fence()
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("stridedLines w=%d lines=%d:\n got %v\nwant %v", w, lines, got, want)
			}
		}
	}
	for _, w := range []uintptr{3, 10} {
		got, want := aligned(int(w)*16), aligned(int(w)*16)
		stridedWords(unsafe.Pointer(&got[0]), unsafe.Pointer(&src[0]), stride*4*3, w, 16)
		stridedWordsGo(unsafe.Pointer(&want[0]), unsafe.Pointer(&src[0]), stride*4*3, w, 16)
		fence()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("stridedWords w=%d:\n got %v\nwant %v", w, got, want)
		}
	}
	got, want := aligned(48), aligned(48)
	fill64Lines(unsafe.Pointer(&got[0]), 0x400000003f800000, 3)
	fill64LinesGo(unsafe.Pointer(&want[0]), 0x400000003f800000, 3)
	fence()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fill64Lines: got %v, want %v", got, want)
	}
	gi, wi := make([]int32, 64), make([]int32, 64)
	iota32Lines(unsafe.Pointer(&gi[16-int(uintptr(unsafe.Pointer(&gi[0]))&63)/4]), -7, 2)
	iota32LinesGo(unsafe.Pointer(&wi[16-int(uintptr(unsafe.Pointer(&wi[0]))&63)/4]), -7, 2)
	fence()
	if fmt.Sprint(gi) != fmt.Sprint(wi) {
		t.Fatalf("iota32Lines: got %v, want %v", gi, wi)
	}
}

// aligned returns n float32s starting at a 64-byte boundary.
func aligned(n int) []float32 {
	b := make([]float32, n+16)
	off := int(-uintptr(unsafe.Pointer(&b[0]))&(line-1)) / 4
	return b[off : off+n]
}

// BenchmarkBatch writes the columns of a CartPole sample batch (4096 sub-environments, 200
// rows each: about 70 MB) chunk by chunk from a trajectory that stays in L1, alternating
// between two batches as a runner does, with ordinary stores (go) and with this package's
// (nt). Its ns/row is the cost of a row's columns.
func BenchmarkBatch(b *testing.B) {
	const envs, rows, stride = 4096, 200, 12
	type batch struct {
		obs, newObs, acts, rews, dist, logp, vf []float32
		eps                                     []int64
		envID, idx, ts                          []int32
	}
	mk := func() *batch {
		n := envs * rows
		return &batch{make([]float32, 4*n), make([]float32, 4*n), make([]float32, n), make([]float32, n),
			make([]float32, 2*n), make([]float32, n), make([]float32, n), make([]int64, n), make([]int32, n),
			make([]int32, n), make([]int32, n)}
	}
	bs := [2]*batch{mk(), mk()}
	tr := make([]float32, (rows+1)*stride)
	// Each way of storing: the strided copy, the fills and what ends a batch.
	type stores struct {
		name    string
		strided func(dst, src []float32, stride, w, n int)
		fill64  func(dst []int64, v int64)
		fill32  func(dst []int32, v int32)
		done    func()
	}
	for _, st := range []stores{
		{"go", StridedCached, fillGo[int64], fillGo[int32], func() {}},
		{"nt", Strided, Fill64[int64], Fill32[int32], Fence},
	} {
		b.Run(st.name, func(b *testing.B) {
			for i := range b.N {
				bt := bs[i%2]
				for e := range envs {
					o := e * rows
					st.strided(bt.obs[4*o:], tr, stride, 4, rows)
					st.strided(bt.newObs[4*o:], tr[stride:], stride, 4, rows)
					st.strided(bt.acts[o:], tr[4:], stride, 1, rows)
					st.strided(bt.rews[o:], tr[5:], stride, 1, rows)
					st.strided(bt.dist[2*o:], tr[6:], stride, 2, rows)
					st.strided(bt.logp[o:], tr[8:], stride, 1, rows)
					st.strided(bt.vf[o:], tr[9:], stride, 1, rows)
					st.fill64(bt.eps[o:o+rows], int64(e))
					st.fill32(bt.envID[o:o+rows], int32(e))
					st.fill32(bt.idx[o:o+rows], 0)
					st.strided(f32(bt.ts[o:]), tr[10:], stride, 1, rows)
					st.done()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*envs*rows), "ns/row")
		})
	}
}

func f32(s []int32) []float32 { return unsafe.Slice((*float32)(unsafe.Pointer(&s[0])), len(s)) }
