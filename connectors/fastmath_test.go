package connectors

import (
	"math"
	"math/rand/v2"
	"testing"
)

// maxRelErr is the accuracy that expNeg and fastLog1p promise against math.Exp and
// math.Log1p; what they reach is far better (the tests log it), and maxRelErrSeen is a
// bound on that, to notice when a change costs accuracy.
const (
	maxRelErr     = 1e-12
	maxRelErrSeen = 1e-15
)

// errTracker keeps the largest relative error of normal results (and where it was), and
// the largest difference, in steps of the subnormal grid (2^-1074), of results that are
// subnormal or 0, where the grid allows no relative accuracy near 0.
type errTracker struct {
	rel    float64
	relAt  float64
	sub    float64
	subAt  float64
	points int
}

// check compares got with want at x and fails on a result outside the promised accuracy,
// NaN where a number is wanted, or the other way round.
func (e *errTracker) check(t *testing.T, name string, x, got, want float64) {
	t.Helper()
	e.points++
	if math.IsNaN(want) || math.IsNaN(got) {
		if math.IsNaN(want) != math.IsNaN(got) {
			t.Fatalf("%s(%v) = %v, want %v", name, x, got, want)
		}
		return
	}
	if math.Abs(want) < 0x1p-1022 {
		// Subnormal or 0: the relative error of a normal result, and a step of the grid.
		d := math.Abs(got-want) / 0x1p-1074
		if d > e.sub {
			e.sub, e.subAt = d, x
		}
		if !(math.Abs(got-want) <= maxRelErr*math.Abs(want)+0x1p-1074) {
			t.Fatalf("%s(%v) = %v, want %v: %v steps of the subnormal grid apart", name, x, got, want, d)
		}
		return
	}
	rel := math.Abs(got-want) / math.Abs(want)
	if rel > e.rel {
		e.rel, e.relAt = rel, x
	}
	if !(rel <= maxRelErr) {
		t.Fatalf("%s(%v) = %v, want %v: relative error %v", name, x, got, want, rel)
	}
}

func (e *errTracker) report(t *testing.T, name string) {
	t.Helper()
	t.Logf("%s: %d points, max relative error %.3g (%.3g ulp of 1) at %v, max subnormal difference %v steps at %v",
		name, e.points, e.rel, e.rel/0x1p-52, e.relAt, e.sub, e.subAt)
	if e.rel > maxRelErrSeen {
		t.Errorf("%s: max relative error %v, more than %v", name, e.rel, maxRelErrSeen)
	}
}

// TestExpNegAccuracy compares expNeg(y) with math.Exp(-y) over a dense scan of [0, 750],
// the points where the reduction's k changes, random points, tiny y (where e^-y rounds to
// 1), the ranges where e^-y is subnormal and rounds to 0, huge y and +Inf (0), and NaN.
func TestExpNegAccuracy(t *testing.T) {
	var e errTracker
	check := func(y float64) { e.check(t, "expNeg", y, expNeg(y), math.Exp(-y)) }
	for _, y := range []float64{0, 0x1p-1074, 0x1p-1022, 1e-300, 1e-20, 0x1p-54, 0x1p-53, 0x1p-52, 1e-10, 0.5,
		math.Ln2 / 2, math.Ln2, 1, 10, 700, 708.39, 708.4, 709, 744, 745, 745.13, 745.1332, 745.14, 745.2,
		746, 747, 1e4, 1e30, math.MaxFloat64, math.Inf(1), math.NaN()} {
		check(y)
		check(math.Nextafter(y, 0))
		check(math.Nextafter(y, math.Inf(1)))
	}
	if got := expNeg(0); got != 1 {
		t.Errorf("expNeg(0) = %v, want 1", got)
	}
	for _, y := range []float64{746, 1e30, math.Inf(1)} {
		if got := expNeg(y); got != 0 || math.Signbit(got) {
			t.Errorf("expNeg(%v) = %v, want 0", y, got)
		}
	}
	for y := 0.0; y < 750; y += 1.0 / 4096 { // exact steps: every y is a float64
		check(y)
	}
	// Where round(y/ln2) changes, r is at the end of its range: ±ln2/2.
	for k := range 1080 {
		y := (float64(k) + 0.5) * math.Ln2
		for i, v := 0, y; i < 8; i, v = i+1, math.Nextafter(v, 0) {
			check(v)
		}
		for i, v := 0, y; i < 8; i, v = i+1, math.Nextafter(v, math.Inf(1)) {
			check(v)
		}
	}
	gen := rand.New(rand.NewPCG(21, 22))
	for range 1_000_000 {
		check(gen.Float64() * 750)
	}
	for range 100_000 {
		check(math.Ldexp(1+gen.Float64(), -gen.IntN(1075))) // log-uniform down to the subnormals
		check(708 + gen.Float64()*38)                       // subnormal results and 0
	}
	e.report(t, "expNeg")
}

// TestFastLog1pAccuracy compares fastLog1p(z) with math.Log1p(z) over a dense scan of
// [0, 1], around the switch at 1/3 and the ends, random points, tiny and subnormal z (where
// log(1+z) rounds to z), and NaN.
func TestFastLog1pAccuracy(t *testing.T) {
	var e errTracker
	check := func(z float64) { e.check(t, "fastLog1p", z, fastLog1p(z), math.Log1p(z)) }
	for _, z := range []float64{0x1p-1074, 0x1p-1073, 1e-310, 0x1p-1022, 1e-300, 1e-154, 1e-20, 0x1p-54, 0x1p-53,
		0x1p-52, 1e-8, 0.25, 1.0 / 3, 0.5, 1 - 0x1p-53, 1, math.NaN()} {
		check(z)
		if z > 0 && z < 1 {
			check(math.Nextafter(z, 0))
			check(math.Nextafter(z, 1))
		}
	}
	if got := fastLog1p(0); got != 0 || math.Signbit(got) {
		t.Errorf("fastLog1p(0) = %v, want 0", got)
	}
	for _, z := range []float64{0x1p-1074, 1e-310, 1e-300, 0x1p-54} {
		if got := fastLog1p(z); got != z {
			t.Errorf("fastLog1p(%v) = %v, want %v itself", z, got, z)
		}
	}
	for i, z := 0, 1.0/3; i < 1000; i, z = i+1, math.Nextafter(z, 0) {
		check(z)
	}
	for i, z := 0, 1.0/3; i < 1000; i, z = i+1, math.Nextafter(z, 1) {
		check(z)
	}
	for z := 0.0; z <= 1; z += 0x1p-22 { // exact steps, 1 included
		check(z)
	}
	gen := rand.New(rand.NewPCG(23, 24))
	for range 1_000_000 {
		check(gen.Float64())
	}
	for range 100_000 {
		check(math.Ldexp(1+gen.Float64(), -1-gen.IntN(1074))) // log-uniform down to the subnormals
	}
	e.report(t, "fastLog1p")
}

// TestLseTwoAccuracy compares lseTwo with the log-sum-exp from math.Exp and math.Log1p on
// rows of two float32 logits: z within maxRelErr (or a subnormal step), and lse = max +
// log(1+z) within a few units in the last place of |max| + log(1+z), the scale of its
// rounding errors (they do not shrink where the sum cancels).
func TestLseTwoAccuracy(t *testing.T) {
	gen := rand.New(rand.NewPCG(25, 26))
	in := twoLogitRows(gen, 200_000)
	var ez errTracker
	worst := 0.0
	for i := 0; i < len(in); i += 2 {
		a, b := float64(in[i]), float64(in[i+1])
		if !finiteTwo(a, b) {
			continue
		}
		z, lse := lseTwo(a, b)
		wantZ := math.Exp(-math.Abs(a - b))
		ez.check(t, "lseTwo's z", a-b, z, wantZ)
		m := max(a, b)
		want := m + math.Log1p(wantZ)
		d := math.Abs(lse-want) / (max(math.Abs(m)+math.Log1p(wantZ), 0x1p-1022) * 0x1p-52)
		worst = max(worst, d)
		if d > 4 {
			t.Fatalf("logits %v %v: lse %v, want %v (%v ulp)", a, b, lse, want, d)
		}
	}
	ez.report(t, "lseTwo's z")
	t.Logf("lseTwo: max difference %.3g ulp of |max| + log(1+z)", worst)
}

// FuzzExpNeg checks expNeg(|y|) against math.Exp(-|y|) for any y.
func FuzzExpNeg(f *testing.F) {
	for _, y := range []float64{0, 1e-300, 0.34657359027997264, 1, 708.4, 745.1332, 746, math.Inf(1), math.NaN()} {
		f.Add(y)
	}
	f.Fuzz(func(t *testing.T, y float64) {
		y = math.Abs(y)
		var e errTracker
		e.check(t, "expNeg", y, expNeg(y), math.Exp(-y))
	})
}

// FuzzFastLog1p checks fastLog1p(z) against math.Log1p(z) for z in [0, 1], brought there
// from any float64 by |z| and then 1/|z| above 1.
func FuzzFastLog1p(f *testing.F) {
	for _, z := range []float64{0, 0x1p-1074, 1e-20, 1.0 / 3, 0.5, 1, math.NaN()} {
		f.Add(z)
	}
	f.Fuzz(func(t *testing.T, z float64) {
		z = math.Abs(z)
		if z > 1 {
			z = 1 / z
		}
		var e errTracker
		e.check(t, "fastLog1p", z, fastLog1p(z), math.Log1p(z))
	})
}
