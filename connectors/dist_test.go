package connectors

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/onnxrl/sampler/spaces"
)

const nSamples = 100_000

func softmax(logits []float32) []float64 {
	lse := logSumExp(logits)
	p := make([]float64, len(logits))
	for i, v := range logits {
		p[i] = math.Exp(float64(v) - lse)
	}
	return p
}

func TestCategoricalStatistics(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	logits := []float32{1, 0, -1, 2, -30}
	d := &Categorical{N: 5, Start: 3}
	p := softmax(logits)
	counts := make([]int, 5)
	act := make([]float32, 1)
	for range nSamples {
		lp := d.Sample(rng, logits, act)
		i := int(act[0]) - 3
		require.True(t, i >= 0 && i < 5, "action %v out of range", act[0])
		counts[i]++
		require.InDelta(t, math.Log(p[i]), lp, 1e-9)
	}
	// Tolerance: 0.006 is over 6 standard errors of a frequency (sqrt(0.25/1e5) = 0.0016).
	for i := range p {
		assert.InDelta(t, p[i], float64(counts[i])/nSamples, 0.006, "category %d", i)
	}
	assert.Zero(t, counts[4], "a category with p = 1e-14 was drawn")
}

func TestCategoricalClosedForms(t *testing.T) {
	logits := []float32{0.3, -1.2, 2.5, 0}
	d := &Categorical{N: 4}
	p := softmax(logits)
	ref := distuv.NewCategorical(p, nil)
	for i := range 4 {
		assert.InDelta(t, ref.LogProb(float64(i)), d.LogProb(logits, []float32{float32(i)}), 1e-9)
	}
	assert.InDelta(t, ref.Entropy(), d.Entropy(logits), 1e-9)
	act := []float32{-1}
	lp := d.Mode(logits, act)
	assert.Equal(t, float32(2), act[0])
	assert.InDelta(t, math.Log(p[2]), lp, 1e-9)
	assert.True(t, math.IsInf(d.LogProb(logits, []float32{4}), -1))
	assert.True(t, math.IsInf(d.LogProb(logits, []float32{0.5}), -1))
	// Uniform logits: entropy log N, and a large shift changes nothing.
	assert.InDelta(t, math.Log(4), d.Entropy([]float32{1e4, 1e4, 1e4, 1e4}), 1e-9)
}

// TestCategoricalTwoClosedForms checks the two-logit path of Categorical (Mode, LogProb and
// Sample use lseTwo) against gonum's categorical.
func TestCategoricalTwoClosedForms(t *testing.T) {
	for _, logits := range [][]float32{{0.3, -1.2}, {-1.2, 0.3}, {2, 2}, {0, -40}, {-700, 20}} {
		d := &Categorical{N: 2, Start: 5}
		ref := distuv.NewCategorical(softmax(logits), nil)
		for i := range 2 {
			want := ref.LogProb(float64(i))
			if p := softmax(logits)[i]; p < 1e-300 {
				want = float64(logits[i]) - logSumExp(logits) // log(p) of a subnormal p has lost its precision
			}
			assert.InDelta(t, want, d.LogProb(logits, []float32{float32(5 + i)}), 1e-12, "logits %v index %d", logits, i)
		}
		act := []float32{-1}
		lp := d.Mode(logits, act)
		k := argmax(logits)
		assert.Equal(t, float32(5+k), act[0])
		assert.InDelta(t, float64(logits[k])-logSumExp(logits), lp, 1e-12, "logits %v", logits)
		rng := rand.New(rand.NewPCG(7, 8))
		for range 100 {
			lp := d.Sample(rng, logits, act)
			assert.Equal(t, d.LogProb(logits, act), lp, "logits %v action %v", logits, act)
		}
	}
}

func TestMultiCategoricalStatistics(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	nvec := []int{2, 3}
	logits := []float32{0, 1, -1, 0.5, 1.5}
	d := NewMultiCategorical(nvec)
	require.Equal(t, 5, d.InputSize())
	p0, p1 := softmax(logits[:2]), softmax(logits[2:])
	c0, c1 := make([]int, 2), make([]int, 3)
	act := make([]float32, 2)
	for range nSamples {
		lp := d.Sample(rng, logits, act)
		c0[int(act[0])]++
		c1[int(act[1])]++
		require.InDelta(t, math.Log(p0[int(act[0])])+math.Log(p1[int(act[1])]), lp, 1e-9)
	}
	for i := range p0 {
		assert.InDelta(t, p0[i], float64(c0[i])/nSamples, 0.006)
	}
	for i := range p1 {
		assert.InDelta(t, p1[i], float64(c1[i])/nSamples, 0.006)
	}
	h := distuv.NewCategorical(p0, nil).Entropy() + distuv.NewCategorical(p1, nil).Entropy()
	assert.InDelta(t, h, d.Entropy(logits), 1e-9)
	d.Mode(logits, act)
	assert.Equal(t, []float32{1, 2}, act)
	assert.InDelta(t, math.Log(p0[1]*p1[0]), d.LogProb(logits, []float32{1, 0}), 1e-9)
}

func TestDiagGaussianStatistics(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	mean := []float64{0.5, -2, 10}
	std := []float64{1, 0.5, 3}
	in := make([]float32, 6)
	for i := range 3 {
		in[i] = float32(mean[i])
		in[3+i] = float32(math.Log(std[i]))
	}
	d := &DiagGaussian{N: 3}
	sum, sq := make([]float64, 3), make([]float64, 3)
	act := make([]float32, 3)
	for range nSamples {
		lp := d.Sample(rng, in, act)
		require.InDelta(t, d.LogProb(in, act), lp, 1e-9)
		for i, v := range act {
			sum[i] += float64(v)
			sq[i] += float64(v) * float64(v)
		}
	}
	for i := range 3 {
		m := sum[i] / nSamples
		v := sq[i]/nSamples - m*m
		// Tolerances: the mean within 5 standard errors (std/sqrt(1e5) = 0.0032 std), the
		// variance within 3% (its relative standard error is sqrt(2/1e5) = 0.45%).
		assert.InDelta(t, mean[i], m, 5*std[i]/math.Sqrt(nSamples), "mean %d", i)
		assert.InEpsilon(t, std[i]*std[i], v, 0.03, "variance %d", i)
	}
}

func TestDiagGaussianClosedForms(t *testing.T) {
	in := []float32{0.5, -2, 0, float32(math.Log(0.5))}
	d := &DiagGaussian{N: 2}
	n0 := distuv.Normal{Mu: 0.5, Sigma: 1}
	n1 := distuv.Normal{Mu: -2, Sigma: float64(float32(math.Exp(float64(in[3]))))}
	x := []float32{1.25, -1.5}
	assert.InDelta(t, n0.LogProb(1.25)+n1.LogProb(-1.5), d.LogProb(in, x), 1e-6)
	assert.InDelta(t, n0.Entropy()+n1.Entropy(), d.Entropy(in), 1e-6)
	lp := d.Mode(in, x)
	assert.Equal(t, []float32{0.5, -2}, x)
	assert.InDelta(t, n0.LogProb(0.5)+n1.LogProb(-2), lp, 1e-6)
}

func TestDeterministic(t *testing.T) {
	d := &Deterministic{N: 2}
	act := make([]float32, 2)
	assert.Zero(t, d.Sample(rand.New(rand.NewPCG(1, 1)), []float32{0.25, -3}, act))
	assert.Equal(t, []float32{0.25, -3}, act)
	assert.Zero(t, d.Entropy([]float32{1, 2}))
	assert.Zero(t, d.LogProb([]float32{1, 2}, act))
}

func TestNewDistribution(t *testing.T) {
	for _, tc := range []struct {
		name  string
		space spaces.Space
		in    int
		act   int
		err   bool
	}{
		{"categorical", &spaces.Discrete{N: 3}, 3, 1, false},
		{"multi_categorical", &spaces.MultiDiscrete{Nvec: []int64{2, 4}}, 6, 2, false},
		{"diag_gaussian", spaces.NewBox(-1, 1, 3), 6, 3, false},
		{"deterministic", spaces.NewBox(-1, 1, 2, 2), 4, 4, false},
		{"categorical", spaces.NewBox(-1, 1, 3), 0, 0, true},
		{"multi_categorical", &spaces.Discrete{N: 3}, 0, 0, true},
		{"diag_gaussian", &spaces.Discrete{N: 3}, 0, 0, true},
		{"beta", &spaces.Discrete{N: 3}, 0, 0, true},
	} {
		d, err := NewDistribution(tc.name, tc.space)
		if tc.err {
			assert.Error(t, err, tc.name)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.name, d.Name())
		assert.Equal(t, tc.in, d.InputSize(), tc.name)
		assert.Equal(t, tc.act, d.ActionSize(), tc.name)
	}
}

func TestDistributionsSeeded(t *testing.T) {
	draw := func(seed uint64) []float32 {
		rng := rand.New(rand.NewPCG(seed, 0))
		c := &Categorical{N: 3}
		g := &DiagGaussian{N: 1}
		var out []float32
		a := make([]float32, 1)
		for range 50 {
			c.Sample(rng, []float32{0, 0, 0}, a)
			out = append(out, a[0])
			g.Sample(rng, []float32{0, 0}, a)
			out = append(out, a[0])
		}
		return out
	}
	assert.Equal(t, draw(7), draw(7))
	assert.NotEqual(t, draw(7), draw(8))
}

func TestDistributionsNoAlloc(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := NewMultiCategorical([]int{3, 3})
	g := &DiagGaussian{N: 2}
	in := []float32{0, 1, 2, 3, 4, 5}
	a := make([]float32, 2)
	allocs := testing.AllocsPerRun(100, func() {
		c.Sample(rng, in, a)
		c.Entropy(in)
		g.Sample(rng, in[:4], a)
		g.Mode(in[:4], a)
	})
	assert.Zero(t, allocs)
}
