package connectors

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/spaces"
)

// exactTwo returns, for two logits that pass finiteTwo, the probability of index 0, that of
// the less likely index, and the log-probabilities of both indices, from math.Exp and
// math.Log1p: the reference for the two-logit path (which uses expNeg and fastLog1p).
func exactTwo(a, b float64) (p0, pMin float64, lp [2]float64) {
	z := math.Exp(-math.Abs(a - b))
	lse := max(a, b) + math.Log1p(z)
	pMin = z / (1 + z)
	p0 = 1 / (1 + z)
	if a < b {
		p0 = pMin
	}
	return p0, pMin, [2]float64{a - lse, b - lse}
}

// ulps32 returns how many float32 values lie from x to y (0 for equal ones, both NaN
// included; a large number for a NaN against a number).
func ulps32(x, y float32) int64 {
	if x == y || (x != x && y != y) {
		return 0
	}
	if x != x || y != y {
		return math.MaxInt64
	}
	// Map the float32 bits to integers that are ordered as the values.
	key := func(v float32) int64 {
		b := int64(math.Float32bits(v))
		if b&(1<<31) != 0 {
			return -(b &^ (1 << 31))
		}
		return b
	}
	d := key(x) - key(y)
	if d < 0 {
		d = -d
	}
	return d
}

// twoDrawChecker checks draws of the two-logit path against sampleLogits' and the exact
// math row by row, and counts the rows whose index differs from sampleLogits' because the
// uniform lies in a band of 1e-12 (relative) around the exact boundary.
type twoDrawChecker struct {
	rows, boundary, offByUlp int
}

// check checks row (two logits) drawn with the uniform f: k and lp are the two-logit
// path's index and log-probability (lp rounded to float32 as the pipeline stores it), and
// kRef and lpRef sampleLogits' from the same uniform.
func (c *twoDrawChecker) check(t *testing.T, row []float32, f float64, k int, lp float32, kRef int, lpRef float64) {
	t.Helper()
	c.rows++
	a, b := float64(row[0]), float64(row[1])
	if !finiteTwo(a, b) {
		// Not the two-logit path: sampleLogits itself.
		require.Equal(t, kRef, k, "logits %v", row)
		require.Equal(t, math.Float32bits(float32(lpRef)), math.Float32bits(lp), "logits %v: %v vs %v", row, lp, lpRef)
		return
	}
	p0, pMin, lpExact := exactTwo(a, b)
	// The probabilities that the draw uses: index 0's is the boundary where f*(1+z) crosses
	// e0, and the less likely index's is z/(1+z).
	z, _ := lseTwo(a, b)
	e0 := 1.0
	if a < b {
		e0 = z
	}
	used, usedMin := e0/(1+z), z/(1+z)
	require.LessOrEqual(t, math.Abs(used-p0), maxRelErr*p0+0x1p-1074, "logits %v: probability %v, exact %v", row, used, p0)
	require.LessOrEqual(t, math.Abs(usedMin-pMin), maxRelErr*pMin+0x1p-1074, "logits %v: probability %v, exact %v", row, usedMin, pMin)
	if k != kRef {
		require.LessOrEqual(t, math.Abs(f-p0), maxRelErr*p0+0x1p-1074,
			"logits %v: index %d, sampleLogits' %d, for a uniform %v away from the boundary %v", row, k, kRef, f, p0)
		c.boundary++
	}
	d := ulps32(float32(lpExact[k]), lp)
	require.LessOrEqual(t, d, int64(2), "logits %v index %d: logp %v, exact %v", row, k, lp, lpExact[k])
	if d != 0 {
		c.offByUlp++
	}
}

func (c *twoDrawChecker) report(t *testing.T) {
	t.Helper()
	t.Logf("%d rows: %d drawn differently from sampleLogits at the boundary, %d float32 log-probabilities an ulp or two from the exact",
		c.rows, c.boundary, c.offByUlp)
	require.LessOrEqual(t, c.boundary, 1, "draws at the boundary")
}

// TestSampleTwoNearSampleLogits checks the two-logit sampler against the general one from
// the same random source, including ties, extreme gaps and non-finite logits: the same
// index but for a uniform at the boundary, log-probabilities within 2 float32 ulps of the
// exact, and non-finite logits handed to sampleLogits itself.
func TestSampleTwoNearSampleLogits(t *testing.T) {
	pairs := [][2]float32{{0, 0}, {1, -1}, {-1, 1}, {3.5, 3.5}, {100, -100}, {-100, 100}, {0, 800}, {-800, 0},
		{float32(math.Inf(1)), 0}, {0, float32(math.Inf(-1))}, {float32(math.NaN()), 1}}
	gen := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		pairs = append(pairs, [2]float32{float32(gen.NormFloat64() * 5), float32(gen.NormFloat64() * 5)})
	}
	var c twoDrawChecker
	for _, p := range pairs {
		r1, r2, r3 := rand.New(rand.NewPCG(9, 9)), rand.New(rand.NewPCG(9, 9)), rand.New(rand.NewPCG(9, 9))
		for range 50 {
			i1, lp1 := sampleTwo(r1, p[0], p[1])
			i2, lp2 := sampleLogits(r2, p[:])
			c.check(t, p[:], r3.Float64(), i1, float32(lp1), i2, lp2)
		}
	}
	c.report(t)
}

// TestModeRows checks the batched mode against Mode row by row (first index on ties).
func TestModeRows(t *testing.T) {
	gen := rand.New(rand.NewPCG(3, 4))
	for _, d := range []interface {
		Distribution
		ModeRows(in, actions []float32, rows int)
	}{&Categorical{N: 2}, &Categorical{N: 2, Start: -1}, &Categorical{N: 5, Start: 3}, NewMultiCategorical([]int{2, 3, 4})} {
		const rows = 37
		in := make([]float32, rows*d.InputSize())
		for i := range in {
			in[i] = float32(gen.IntN(3)) // many ties
		}
		in[0] = float32(math.NaN())
		got := make([]float32, rows*d.ActionSize())
		d.ModeRows(in, got, rows)
		want := make([]float32, d.ActionSize())
		for i := range rows {
			d.Mode(in[i*d.InputSize():(i+1)*d.InputSize()], want)
			require.Equal(t, want, got[i*d.ActionSize():(i+1)*d.ActionSize()], "%s row %d", d.Name(), i)
		}
	}
}

// TestBulkAccessors checks that the whole-batch accessors hold the rows of the per-row ones.
func TestBulkAccessors(t *testing.T) {
	p, err := NewActionPipeline(&DiagGaussian{N: 2}, spaces.NewBox(-2, 2, 2),
		ActionConfig{Explore: true, NormalizeActions: true}, 8)
	require.NoError(t, err)
	out := []float32{0.1, 0.2, -0.3, -0.4, 0.5, 0.6, 3, -3, 0, 0, 0, 0}
	p.Compute(rand.New(rand.NewPCG(1, 1)), 3, out, nil)
	require.Len(t, p.Actions(), 6)
	require.Len(t, p.LogPs(), 3)
	require.Len(t, p.AllDistInputs(), 12)
	for i := range 3 {
		require.Equal(t, p.Action(i), p.Actions()[2*i:2*i+2])
		require.Equal(t, p.PolicyAction(i), p.PolicyActions()[2*i:2*i+2])
		require.Equal(t, p.LogP(i), p.LogPs()[i])
		require.Equal(t, p.DistInputs(i), p.AllDistInputs()[4*i:4*i+4])
	}
}

// TestCopies checks which pipelines copy the raw observation as it is.
func TestCopies(t *testing.T) {
	box := spaces.NewBox(-1, 1, 4)
	cases := []struct {
		name  string
		space spaces.Space
		conns []AgentConnector
		want  bool
	}{
		{"none", box, nil, true},
		{"flatten box", box, []AgentConnector{NewFlatten(box)}, true},
		{"flatten discrete", &spaces.Discrete{N: 3}, []AgentConnector{NewFlatten(&spaces.Discrete{N: 3})}, false},
		{"flatten then filter", box, []AgentConnector{NewFlatten(box), NewMeanStdFilter(5)}, false},
		{"filter", box, []AgentConnector{NewMeanStdFilter(5)}, false},
	}
	for _, c := range cases {
		p, err := NewAgentPipeline(c.space, c.conns...)
		require.NoError(t, err, c.name)
		require.Equal(t, c.want, p.Copies(), c.name)
	}
	p, err := NewAgentPipeline(box, NewFlatten(box), NewPrevActions(&spaces.Discrete{N: 2}, 2))
	require.NoError(t, err)
	require.True(t, p.RecordsActions())
	p, err = NewAgentPipeline(box, NewFlatten(box))
	require.NoError(t, err)
	require.False(t, p.RecordsActions())
}

// TestSampleTwoRowsMatchesSample checks that the bulk two-logit sampler gives each row the
// action and log-probability of Categorical.Sample row by row, from the same random source,
// bit for bit, with ties, extreme gaps and non-finite logits among ordinary rows, and that
// Categorical.LogProb gives the drawn action Sample's log-probability, bit for bit.
func TestSampleTwoRowsMatchesSample(t *testing.T) {
	gen := rand.New(rand.NewPCG(5, 6))
	const rows = 301
	in := make([]float32, 2*rows)
	for i := range in {
		in[i] = float32(gen.NormFloat64() * 4)
	}
	special := [][2]float32{{0, 0}, {3.5, 3.5}, {100, -100}, {-100, 100}, {0, 800}, {-800, 0},
		{float32(math.Inf(1)), 0}, {0, float32(math.Inf(-1))}, {float32(math.NaN()), 1}, {1, float32(math.NaN())},
		{float32(math.Inf(-1)), float32(math.Inf(-1))}}
	for k, p := range special {
		copy(in[2*(k*7+3):], p[:])
	}
	for _, start := range []int64{0, -1, 4} {
		c := &Categorical{N: 2, Start: start}
		r1, r2 := rand.New(rand.NewPCG(9, uint64(start+10))), rand.New(rand.NewPCG(9, uint64(start+10)))
		acts, logp := make([]float32, rows), make([]float32, rows)
		sampleTwoRows(r1, in, start, acts, logp, make([]float64, 2*rows))
		want := make([]float32, 1)
		for i := range rows {
			row := in[2*i : 2*i+2]
			lp64 := c.Sample(r2, row, want)
			lp := float32(lp64)
			require.Equal(t, want[0], acts[i], "row %d logits %v", i, row)
			require.Equal(t, math.Float32bits(lp), math.Float32bits(logp[i]), "row %d logits %v: %v vs %v", i, row, logp[i], lp)
			// LogProb of the drawn action is the draw's log-probability, bit for bit.
			if lpc := c.LogProb(row, want); !(math.IsNaN(lpc) && math.IsNaN(lp64)) {
				require.Equal(t, math.Float64bits(lp64), math.Float64bits(lpc), "row %d logits %v: LogProb %v, Sample's %v", i, row, lpc, lp64)
			}
		}
		require.Equal(t, r2.Uint64(), r1.Uint64(), "the random sources drifted apart")
	}
}

// twoLogitRows returns rows of two logits that stress the two-logit fast paths: ordinary
// ones, near ties (equal, one float32 ulp apart, or closer than float32 rounding of a small
// gap), huge gaps (where z = exp(min-max) is subnormal or 0), a -Inf logit beside a finite
// one (z = 0), and now and then a row that has to fall back (NaN, +Inf, two -Inf).
func twoLogitRows(gen *rand.Rand, rows int) []float32 {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	in := make([]float32, 2*rows)
	for i := range rows {
		a := float32(gen.NormFloat64() * 4)
		var b float32
		switch gen.IntN(10) {
		case 0:
			b = a
		case 1:
			b = math.Nextafter32(a, float32(math.Inf(2*gen.IntN(2)-1)))
		case 2:
			b = a + float32(gen.NormFloat64()*1e-6)
		case 3:
			b = a + float32(gen.NormFloat64()*800) // exp underflows past about -745
		case 4:
			b = a - float32(700+gen.Float64()*60) // around the subnormal range of exp
		case 5:
			switch gen.IntN(8) {
			case 0:
				b = nan
			case 1:
				b = inf
			case 2:
				a, b = -inf, -inf
			default:
				b = -inf
			}
		default:
			b = float32(gen.NormFloat64() * 4)
		}
		if gen.IntN(2) == 0 {
			a, b = b, a
		}
		in[2*i], in[2*i+1] = a, b
	}
	return in
}

// TestSampleTwoRowsRandom checks the bulk two-logit sampler against sampleTwo and against
// the general sampleLogits row by row, from copies of one random source, on 100k rows in
// batches of random sizes: sampleTwo's actions and float32 log-probabilities bit for bit,
// sampleLogits' actions but for uniforms at the boundary, log-probabilities within 2
// float32 ulps of the exact, and the random sources in step afterwards.
func TestSampleTwoRowsRandom(t *testing.T) {
	gen := rand.New(rand.NewPCG(11, 12))
	var c twoDrawChecker
	for done := 0; done < 100_000; {
		rows := 1 + gen.IntN(600)
		done += rows
		in := twoLogitRows(gen, rows)
		start := gen.Int64N(5) - 2
		seed := gen.Uint64()
		src := func() *rand.Rand { return rand.New(rand.NewPCG(seed, 1)) }
		r1, r2, r3, r4 := src(), src(), src(), src() // r4 tells the uniform of each row
		acts, logp := make([]float32, rows), make([]float32, rows)
		scratch := make([]float64, 2*rows)
		sampleTwoRows(r1, in, start, acts, logp, scratch)
		for i := range rows {
			row := in[2*i : 2*i+2]
			a, b := float64(row[0]), float64(row[1])
			require.Equal(t, finiteTwo(a, b), isFinite(scratch[rows+i]), "row %d logits %v: lseTwoRows' lse %v", i, row, scratch[rows+i])
			if finiteTwo(a, b) {
				z, lse := lseTwo(a, b)
				require.Equal(t, math.Float64bits(z), math.Float64bits(scratch[i]), "row %d logits %v: lseTwoRows' z", i, row)
				require.Equal(t, math.Float64bits(lse), math.Float64bits(scratch[rows+i]), "row %d logits %v: lseTwoRows' lse", i, row)
			}
			k2, lp2 := sampleTwo(r2, row[0], row[1])
			k3, lp3 := sampleLogits(r3, row)
			require.Equal(t, float32(int64(k2)+start), acts[i], "row %d logits %v: sampleTwo", i, row)
			require.Equal(t, math.Float32bits(float32(lp2)), math.Float32bits(logp[i]), "row %d logits %v: sampleTwo's logp %v, got %v", i, row, lp2, logp[i])
			c.check(t, row, r4.Float64(), k2, logp[i], k3, lp3)
		}
		next := r1.Uint64()
		require.Equal(t, next, r2.Uint64(), "the random sources drifted apart")
		require.Equal(t, next, r3.Uint64(), "the random sources drifted apart")
		require.Equal(t, next, r4.Uint64(), "the random sources drifted apart")
	}
	c.report(t)
}

// TestPickTwoAtTheBoundary checks the branchless two-logit draw against sampleLogits' loop
// (written out here for a given uniform f and given weights) with lseTwo's weights, where
// they could part: f at and around the point where u = f*(e0+e1) crosses e0, at 0 and just
// below 1, with ties, gaps that make z subnormal or 0, and a -Inf logit.
func TestPickTwoAtTheBoundary(t *testing.T) {
	ref := func(f float64, e [2]float64) int {
		u := f * (0 + e[0] + e[1])
		c, last := 0.0, 0
		for i, p := range e {
			if p <= 0 {
				continue
			}
			last = i
			c += p
			if u < c {
				return i
			}
		}
		return last
	}
	gen := rand.New(rand.NewPCG(13, 14))
	pairs := [][2]float64{{0, 0}, {1, 1}, {0, 1e-7}, {1e-7, 0}, {0, 745.5}, {745.5, 0}, {0, 800}, {-800, 0},
		{0, 720}, {-720, 0}, {0, math.Inf(-1)}, {math.Inf(-1), 2}, {3, float64(math.Nextafter32(3, 4))}}
	for range 2000 {
		pairs = append(pairs, [2]float64{float64(float32(gen.NormFloat64() * 3)), float64(float32(gen.NormFloat64() * 3))})
	}
	for _, p := range pairs {
		a, b := p[0], p[1]
		z, _ := lseTwo(a, b)
		e := [2]float64{1, z} // the weights sampleLogits would have with lseTwo's z
		if a < b {
			e = [2]float64{z, 1}
		}
		// f where f*(e0+e1) reaches e0, and its neighbours.
		fs := []float64{0, 0x1p-53, 0.5, 1 - 0x1p-53}
		c := e[0] / (1 + z)
		for i, f := 0, c; i < 4; i, f = i+1, math.Nextafter(f, 0) {
			fs = append(fs, f)
		}
		for i, f := 0, c; i < 4; i, f = i+1, math.Nextafter(f, 1) {
			fs = append(fs, f)
		}
		for _, f := range fs {
			if f < 0 || f >= 1 {
				continue
			}
			require.Equal(t, ref(f, e), pickTwo(f, a, b, z), "f %v logits %v", f, p)
		}
	}
}

// TestModeTwoRowsMatchesMode checks the bulk two-logit mode against Categorical.Mode row by
// row: the same actions and float32 log-probabilities, bit for bit, also through the
// pipeline (mode with its log-probability), which allocates nothing; and the
// log-probabilities within 2 float32 ulps of the exact.
func TestModeTwoRowsMatchesMode(t *testing.T) {
	gen := rand.New(rand.NewPCG(15, 16))
	for _, start := range []int64{0, -1, 4} {
		const rows = 5000
		in := twoLogitRows(gen, rows)
		c := &Categorical{N: 2, Start: start}
		acts, logp := make([]float32, rows), make([]float32, rows)
		modeTwoRows(in, start, acts, logp, make([]float64, 2*rows))
		p, err := NewActionPipeline(c, &spaces.Discrete{N: 2, Start: start}, ActionConfig{}, rows)
		require.NoError(t, err)
		p.Compute(nil, rows, in, nil)
		want := make([]float32, 1)
		for i := range rows {
			row := in[2*i : 2*i+2]
			lp := float32(c.Mode(row, want))
			require.Equal(t, want[0], acts[i], "row %d logits %v", i, row)
			require.Equal(t, math.Float32bits(lp), math.Float32bits(logp[i]), "row %d logits %v: %v vs %v", i, row, logp[i], lp)
			if a, b := float64(row[0]), float64(row[1]); finiteTwo(a, b) {
				_, _, exact := exactTwo(a, b)
				k := int(want[0]) - int(start)
				require.LessOrEqual(t, ulps32(float32(exact[k]), lp), int64(2), "row %d logits %v: logp %v, exact %v", i, row, lp, exact[k])
			}
			require.Equal(t, want[0], p.Action(i)[0], "pipeline row %d", i)
			require.Equal(t, math.Float32bits(lp), math.Float32bits(p.LogP(i)), "pipeline row %d", i)
		}
		require.Zero(t, testing.AllocsPerRun(20, func() { p.Compute(nil, rows, in, nil) }))
	}
}

// TestSampleTwoRowsPipelineNoAlloc checks that the pipeline samples two logits in bulk
// without allocating, with the actions and log-probabilities of Categorical.Sample.
func TestSampleTwoRowsPipelineNoAlloc(t *testing.T) {
	const rows = 256
	c := &Categorical{N: 2, Start: 1}
	p, err := NewActionPipeline(c, &spaces.Discrete{N: 2, Start: 1}, ActionConfig{Explore: true}, rows)
	require.NoError(t, err)
	in := twoLogitRows(rand.New(rand.NewPCG(17, 18)), rows)
	r1, r2 := rand.New(rand.NewPCG(19, 20)), rand.New(rand.NewPCG(19, 20))
	p.Compute(r1, rows, in, nil)
	want := make([]float32, 1)
	for i := range rows {
		lp := float32(c.Sample(r2, in[2*i:2*i+2], want))
		require.Equal(t, want[0], p.Action(i)[0], "row %d", i)
		require.Equal(t, math.Float32bits(lp), math.Float32bits(p.LogP(i)), "row %d", i)
	}
	require.Zero(t, testing.AllocsPerRun(20, func() { p.Compute(r1, rows, in, nil) }))
}
