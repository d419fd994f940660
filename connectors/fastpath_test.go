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
