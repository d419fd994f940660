package connectors

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/spaces"
)

// TestSampleTwoMatchesSampleLogits checks that the two-logit sampler draws the same index
// with the same log-probability, bit for bit, as the general one, from the same random
// source, including ties, extreme gaps and non-finite logits.
func TestSampleTwoMatchesSampleLogits(t *testing.T) {
	pairs := [][2]float32{{0, 0}, {1, -1}, {-1, 1}, {3.5, 3.5}, {100, -100}, {-100, 100}, {0, 800}, {-800, 0},
		{float32(math.Inf(1)), 0}, {0, float32(math.Inf(-1))}, {float32(math.NaN()), 1}}
	gen := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		pairs = append(pairs, [2]float32{float32(gen.NormFloat64() * 5), float32(gen.NormFloat64() * 5)})
	}
	for _, p := range pairs {
		r1, r2 := rand.New(rand.NewPCG(9, 9)), rand.New(rand.NewPCG(9, 9))
		for range 50 {
			i1, lp1 := sampleTwo(r1, p[0], p[1])
			i2, lp2 := sampleLogits(r2, p[:])
			require.Equal(t, i2, i1, "logits %v", p)
			if math.IsNaN(lp2) {
				require.True(t, math.IsNaN(lp1), "logits %v", p)
			} else {
				require.Equal(t, math.Float64bits(lp2), math.Float64bits(lp1), "logits %v: %v vs %v", p, lp1, lp2)
			}
		}
	}
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
// bit for bit, with ties, extreme gaps and non-finite logits among ordinary rows.
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
			lp := float32(c.Sample(r2, in[2*i:2*i+2], want))
			require.Equal(t, want[0], acts[i], "row %d logits %v", i, in[2*i:2*i+2])
			require.Equal(t, math.Float32bits(lp), math.Float32bits(logp[i]), "row %d logits %v: %v vs %v", i, in[2*i:2*i+2], logp[i], lp)
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
// batches of random sizes: the same actions, the same float32 log-probabilities (bit for
// bit), and the random sources in step afterwards.
func TestSampleTwoRowsRandom(t *testing.T) {
	gen := rand.New(rand.NewPCG(11, 12))
	for done := 0; done < 100_000; {
		rows := 1 + gen.IntN(600)
		done += rows
		in := twoLogitRows(gen, rows)
		start := gen.Int64N(5) - 2
		seed := gen.Uint64()
		r1, r2, r3 := rand.New(rand.NewPCG(seed, 1)), rand.New(rand.NewPCG(seed, 1)), rand.New(rand.NewPCG(seed, 1))
		acts, logp := make([]float32, rows), make([]float32, rows)
		sampleTwoRows(r1, in, start, acts, logp, make([]float64, 2*rows))
		for i := range rows {
			row := in[2*i : 2*i+2]
			k2, lp2 := sampleTwo(r2, row[0], row[1])
			k3, lp3 := sampleLogits(r3, row)
			require.Equal(t, float32(int64(k2)+start), acts[i], "row %d logits %v: sampleTwo", i, row)
			require.Equal(t, math.Float32bits(float32(lp2)), math.Float32bits(logp[i]), "row %d logits %v: sampleTwo's logp %v, got %v", i, row, lp2, logp[i])
			require.Equal(t, k3, k2, "row %d logits %v: sampleLogits", i, row)
			require.Equal(t, math.Float64bits(lp3), math.Float64bits(lp2), "row %d logits %v: sampleLogits' logp %v, sampleTwo's %v", i, row, lp3, lp2)
		}
		next := r1.Uint64()
		require.Equal(t, next, r2.Uint64(), "the random sources drifted apart")
		require.Equal(t, next, r3.Uint64(), "the random sources drifted apart")
	}
}

// TestPickTwoAtTheBoundary checks the branchless two-logit draw against sampleLogits' draw
// (written out here for a given uniform f) where they could part: f at and around the point
// where u = f*(e0+e1) crosses e0, at 0 and just below 1, with ties, gaps that make z
// subnormal or 0, and a -Inf logit.
func TestPickTwoAtTheBoundary(t *testing.T) {
	ref := func(f float64, logits [2]float64) int {
		m := max(logits[0], logits[1])
		e := [2]float64{math.Exp(logits[0] - m), math.Exp(logits[1] - m)}
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
		{0, math.Inf(-1)}, {math.Inf(-1), 2}, {3, float64(math.Nextafter32(3, 4))}}
	for range 2000 {
		pairs = append(pairs, [2]float64{float64(float32(gen.NormFloat64() * 3)), float64(float32(gen.NormFloat64() * 3))})
	}
	for _, p := range pairs {
		a, b := p[0], p[1]
		z := math.Exp(min(a, b) - max(a, b))
		e0 := z
		if a >= b {
			e0 = 1
		}
		// f where f*(e0+e1) reaches e0, and its neighbours.
		fs := []float64{0, 0x1p-53, 0.5, 1 - 0x1p-53}
		c := e0 / (1 + z)
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
			require.Equal(t, ref(f, p), pickTwo(f, a, b, z), "f %v logits %v", f, p)
		}
	}
}

// TestModeTwoRowsMatchesMode checks the bulk two-logit mode against Categorical.Mode row by
// row: the same actions and float32 log-probabilities, bit for bit, also through the
// pipeline (mode with its log-probability), which allocates nothing.
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
