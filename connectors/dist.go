package connectors

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/spaces"
)

// Distribution is an action distribution over one batch row of distribution inputs (the
// model's action output row; for diag_gaussian the mean followed by the log_std).
//
// Actions are in the raw layout of the action space: a Discrete action is its value
// (Start..Start+N-1), a MultiDiscrete action its indices, a Box action its elements.
// Sample, Mode, LogProb and Entropy allocate nothing and panic when a slice has the wrong
// length (a programmer error).
type Distribution interface {
	// Name is the policy spec's name: "categorical", "multi_categorical", "diag_gaussian" or
	// "deterministic".
	Name() string
	// InputSize is the number of distribution inputs per row.
	InputSize() int
	// ActionSize is the number of values of one action (the action space's Size).
	ActionSize() int
	// Sample draws an action from the distribution given by in into action and returns
	// its log-probability.
	Sample(rng *rand.Rand, in, action []float32) float64
	// Mode writes the most likely action (argmax, or the mean) into action and returns its
	// log-probability.
	Mode(in, action []float32) float64
	// LogProb returns the log-probability (density for diag_gaussian) of action.
	LogProb(in, action []float32) float64
	// Entropy returns the entropy of the distribution.
	Entropy(in []float32) float64
}

// NewDistribution returns the distribution named by the policy spec (models.Categorical,
// ...) for the action space. It is an error when the space does not fit the distribution.
func NewDistribution(name string, action spaces.Space) (Distribution, error) {
	switch name {
	case models.Categorical:
		d, ok := action.(*spaces.Discrete)
		if !ok {
			return nil, fmt.Errorf("connectors: distribution categorical needs a Discrete action space, got %s", spaces.String(action))
		}
		return &Categorical{N: int(d.N), Start: d.Start}, nil
	case models.MultiCategorical:
		md, ok := action.(*spaces.MultiDiscrete)
		if !ok {
			return nil, fmt.Errorf("connectors: distribution multi_categorical needs a MultiDiscrete action space, got %s", spaces.String(action))
		}
		nvec := make([]int, len(md.Nvec))
		for i, n := range md.Nvec {
			nvec[i] = int(n)
		}
		return NewMultiCategorical(nvec), nil
	case models.DiagGaussian:
		b, ok := action.(*spaces.Box)
		if !ok {
			return nil, fmt.Errorf("connectors: distribution diag_gaussian needs a Box action space, got %s", spaces.String(action))
		}
		return &DiagGaussian{N: b.Size()}, nil
	case models.Deterministic:
		return &Deterministic{N: action.Size()}, nil
	}
	return nil, fmt.Errorf("connectors: unknown distribution %q (want %s, %s, %s or %s)", name,
		models.Categorical, models.MultiCategorical, models.DiagGaussian, models.Deterministic)
}

func checkLen(op, what string, got, want int) {
	if got != want {
		panic(fmt.Sprintf("connectors: %s: len(%s) = %d, want %d", op, what, got, want))
	}
}

// logSumExp returns max and log(sum(exp(x-max))) + max over x.
func logSumExp(x []float32) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, float64(v))
	}
	if math.IsInf(m, 0) || math.IsNaN(m) {
		return m
	}
	s := 0.0
	for _, v := range x {
		s += math.Exp(float64(v) - m)
	}
	return m + math.Log(s)
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// sampleLogits draws an index from softmax(logits) by inverting the cumulative distribution
// and returns it with its log-probability.
func sampleLogits(rng *rand.Rand, logits []float32) (int, float64) {
	var buf [16]float64
	if len(logits) > len(buf) {
		return sampleLogitsLong(rng, logits)
	}
	// One exp per logit: e[i] = exp(v_i - max), drawn against u * sum(e).
	m := math.Inf(-1)
	for _, v := range logits {
		m = max(m, float64(v))
	}
	if math.IsInf(m, 0) || math.IsNaN(m) {
		return sampleLogitsLong(rng, logits)
	}
	e := buf[:len(logits)]
	sum := 0.0
	for i, v := range logits {
		e[i] = math.Exp(float64(v) - m)
		sum += e[i]
	}
	lse := m + math.Log(sum)
	u := rng.Float64() * sum
	c := 0.0
	last := 0
	for i, p := range e {
		if p <= 0 {
			continue
		}
		last = i
		c += p
		if u < c {
			return i, float64(logits[i]) - lse
		}
	}
	// u fell in the rounding gap above the total: take the last index with mass.
	return last, float64(logits[last]) - lse
}

// sampleLogitsLong is sampleLogits for many logits (or infinite ones), without a buffer.
func sampleLogitsLong(rng *rand.Rand, logits []float32) (int, float64) {
	lse := logSumExp(logits)
	u := rng.Float64()
	c := 0.0
	last := 0
	for i, v := range logits {
		p := math.Exp(float64(v) - lse)
		if p <= 0 {
			continue
		}
		last = i
		c += p
		if u < c {
			return i, float64(v) - lse
		}
	}
	// u fell in the rounding gap above the total: take the last index with mass.
	return last, float64(logits[last]) - lse
}

func entropyLogits(logits []float32) float64 {
	lse := logSumExp(logits)
	h := 0.0
	for _, v := range logits {
		lp := float64(v) - lse
		if p := math.Exp(lp); p > 0 {
			h -= p * lp
		}
	}
	return h
}

// Categorical is a categorical distribution over N actions given by N logits (RLlib's
// TorchCategorical); actions are Start..Start+N-1.
type Categorical struct {
	N     int
	Start int64
}

// Name returns "categorical".
func (c *Categorical) Name() string { return models.Categorical }

// InputSize returns N.
func (c *Categorical) InputSize() int { return c.N }

// ActionSize returns 1.
func (c *Categorical) ActionSize() int { return 1 }

// Sample draws from softmax(in).
func (c *Categorical) Sample(rng *rand.Rand, in, action []float32) float64 {
	checkLen("Categorical.Sample", "in", len(in), c.N)
	checkLen("Categorical.Sample", "action", len(action), 1)
	var i int
	var lp float64
	if c.N == 2 {
		i, lp = sampleTwo(rng, in[0], in[1])
	} else {
		i, lp = sampleLogits(rng, in)
	}
	action[0] = float32(int64(i) + c.Start)
	return lp
}

// sampleTwo is sampleLogits for two logits, with one exp instead of two (the same draw and
// the same log-probability, bit for bit).
func sampleTwo(rng *rand.Rand, l0, l1 float32) (int, float64) {
	a, b := float64(l0), float64(l1)
	if !finiteTwo(a, b) {
		return sampleLogits(rng, []float32{l0, l1})
	}
	z := math.Exp(min(a, b) - max(a, b))
	return drawTwo(rng, a, b, z, max(a, b)+math.Log(1+z))
}

// finiteTwo reports whether two logits take drawTwo's path (otherwise sampleLogits').
func finiteTwo(a, b float64) bool {
	m := max(a, b)
	return !math.IsInf(m, 0) && !math.IsNaN(m) && !math.IsNaN(a) && !math.IsNaN(b)
}

// drawTwo draws between finite logits a and b: z = exp(min-max) is the less likely one's
// weight (the likelier one's is exp(0) = 1) and lse = max + log(1+z). The draw and the
// log-probability are sampleLogits', bit for bit.
func drawTwo(rng *rand.Rand, a, b, z, lse float64) (int, float64) {
	e0, e1 := 1.0, 1.0
	if a < b {
		e0 = z
	} else if b < a {
		e1 = z
	}
	u := rng.Float64() * (e0 + e1)
	if e0 > 0 && u < e0 {
		return 0, a - lse
	}
	if e1 > 0 {
		return 1, b - lse
	}
	return 0, a - lse
}

// sampleTwoRows is sampleTwo over rows of two logits (in holds len(actions) rows), writing
// each row's action (index + start) and log-probability. The draws and log-probabilities are
// those of sampleTwo row by row, bit for bit, in the same order from rng; the exps and the
// logs of all rows are computed in loops of their own first, so that they overlap in the CPU
// instead of each row waiting on its own. scratch holds at least 2*len(actions) values.
func sampleTwoRows(rng *rand.Rand, in []float32, start int64, actions, logp []float32, scratch []float64) {
	rows := len(actions)
	checkLen("sampleTwoRows", "in", len(in), 2*rows)
	checkLen("sampleTwoRows", "logp", len(logp), rows)
	z, lse := scratch[:rows], scratch[rows:2*rows]
	for i := range rows {
		a, b := float64(in[2*i]), float64(in[2*i+1])
		z[i] = math.Exp(min(a, b) - max(a, b))
	}
	for i := range rows {
		a, b := float64(in[2*i]), float64(in[2*i+1])
		lse[i] = max(a, b) + math.Log(1+z[i])
	}
	for i := range rows {
		a, b := float64(in[2*i]), float64(in[2*i+1])
		var k int
		var lp float64
		if finiteTwo(a, b) {
			k, lp = drawTwo(rng, a, b, z[i], lse[i])
		} else {
			k, lp = sampleLogits(rng, in[2*i:2*i+2])
		}
		actions[i] = float32(int64(k) + start)
		logp[i] = float32(lp)
	}
}

// Mode writes the argmax (the first on ties).
func (c *Categorical) Mode(in, action []float32) float64 {
	checkLen("Categorical.Mode", "in", len(in), c.N)
	checkLen("Categorical.Mode", "action", len(action), 1)
	i := argmax(in)
	action[0] = float32(int64(i) + c.Start)
	return float64(in[i]) - logSumExp(in)
}

// ModeOnly writes the argmax into action without computing its log-probability.
func (c *Categorical) ModeOnly(in, action []float32) {
	checkLen("Categorical.Mode", "in", len(in), c.N)
	checkLen("Categorical.Mode", "action", len(action), 1)
	action[0] = float32(int64(argmax(in)) + c.Start)
}

// ModeRows writes the argmax of each of rows rows of N logits into actions (one per row).
func (c *Categorical) ModeRows(in, actions []float32, rows int) {
	checkLen("Categorical.ModeRows", "in", len(in), rows*c.N)
	checkLen("Categorical.ModeRows", "actions", len(actions), rows)
	if c.N == 2 {
		// An integer select (a conditional move, no branch: the comparison goes either
		// way at random while exploring-trained policies are unsure).
		vals := [2]float32{float32(c.Start), float32(c.Start + 1)}
		in = in[:2*rows]
		for i := range actions[:rows] {
			k := 0
			if in[2*i+1] > in[2*i] {
				k = 1
			}
			actions[i] = vals[k&1]
		}
		return
	}
	for i := range rows {
		actions[i] = float32(int64(argmax(in[i*c.N:(i+1)*c.N])) + c.Start)
	}
}

// LogProb returns log softmax(in)[action-Start], or -Inf for an action outside the range.
func (c *Categorical) LogProb(in, action []float32) float64 {
	checkLen("Categorical.LogProb", "in", len(in), c.N)
	checkLen("Categorical.LogProb", "action", len(action), 1)
	i := int64(action[0]) - c.Start
	if i < 0 || i >= int64(c.N) || float32(i+c.Start) != action[0] {
		return math.Inf(-1)
	}
	return float64(in[i]) - logSumExp(in)
}

// Entropy returns -sum p log p.
func (c *Categorical) Entropy(in []float32) float64 {
	checkLen("Categorical.Entropy", "in", len(in), c.N)
	return entropyLogits(in)
}

// MultiCategorical is a product of independent categoricals, one per entry of Nvec, given
// by the concatenation of their logits (RLlib's TorchMultiCategorical).
type MultiCategorical struct {
	Nvec []int
	sum  int
}

// NewMultiCategorical returns the distribution for a MultiDiscrete space with nvec.
func NewMultiCategorical(nvec []int) *MultiCategorical {
	m := &MultiCategorical{Nvec: append([]int(nil), nvec...)}
	for _, n := range nvec {
		m.sum += n
	}
	return m
}

// Name returns "multi_categorical".
func (m *MultiCategorical) Name() string { return models.MultiCategorical }

// InputSize returns sum(Nvec).
func (m *MultiCategorical) InputSize() int { return m.sum }

// ActionSize returns len(Nvec).
func (m *MultiCategorical) ActionSize() int { return len(m.Nvec) }

// Sample draws each component independently; the log-probability is the sum.
func (m *MultiCategorical) Sample(rng *rand.Rand, in, action []float32) float64 {
	checkLen("MultiCategorical.Sample", "in", len(in), m.sum)
	checkLen("MultiCategorical.Sample", "action", len(action), len(m.Nvec))
	lp, off := 0.0, 0
	for j, n := range m.Nvec {
		i, l := sampleLogits(rng, in[off:off+n])
		action[j] = float32(i)
		lp += l
		off += n
	}
	return lp
}

// Mode writes each component's argmax.
func (m *MultiCategorical) Mode(in, action []float32) float64 {
	checkLen("MultiCategorical.Mode", "in", len(in), m.sum)
	checkLen("MultiCategorical.Mode", "action", len(action), len(m.Nvec))
	lp, off := 0.0, 0
	for j, n := range m.Nvec {
		seg := in[off : off+n]
		i := argmax(seg)
		action[j] = float32(i)
		lp += float64(seg[i]) - logSumExp(seg)
		off += n
	}
	return lp
}

// ModeOnly writes each component's argmax into action without computing log-probabilities.
func (m *MultiCategorical) ModeOnly(in, action []float32) {
	checkLen("MultiCategorical.Mode", "in", len(in), m.sum)
	checkLen("MultiCategorical.Mode", "action", len(action), len(m.Nvec))
	off := 0
	for j, n := range m.Nvec {
		action[j] = float32(argmax(in[off : off+n]))
		off += n
	}
}

// ModeRows writes the argmax of every component of each of rows rows into actions.
func (m *MultiCategorical) ModeRows(in, actions []float32, rows int) {
	k := len(m.Nvec)
	checkLen("MultiCategorical.ModeRows", "in", len(in), rows*m.sum)
	checkLen("MultiCategorical.ModeRows", "actions", len(actions), rows*k)
	for i := range rows {
		m.ModeOnly(in[i*m.sum:(i+1)*m.sum], actions[i*k:(i+1)*k])
	}
}

// LogProb returns the sum of the components' log-probabilities.
func (m *MultiCategorical) LogProb(in, action []float32) float64 {
	checkLen("MultiCategorical.LogProb", "in", len(in), m.sum)
	checkLen("MultiCategorical.LogProb", "action", len(action), len(m.Nvec))
	lp, off := 0.0, 0
	for j, n := range m.Nvec {
		seg := in[off : off+n]
		i := int(action[j])
		if i < 0 || i >= n || float32(i) != action[j] {
			return math.Inf(-1)
		}
		lp += float64(seg[i]) - logSumExp(seg)
		off += n
	}
	return lp
}

// Entropy returns the sum of the components' entropies.
func (m *MultiCategorical) Entropy(in []float32) float64 {
	checkLen("MultiCategorical.Entropy", "in", len(in), m.sum)
	h, off := 0.0, 0
	for _, n := range m.Nvec {
		h += entropyLogits(in[off : off+n])
		off += n
	}
	return h
}

var halfLog2Pi = 0.5 * math.Log(2*math.Pi)

// DiagGaussian is a diagonal Gaussian over N values given by N means followed by N log
// standard deviations (RLlib's TorchDiagGaussian).
type DiagGaussian struct {
	N int
}

// Name returns "diag_gaussian".
func (g *DiagGaussian) Name() string { return models.DiagGaussian }

// InputSize returns 2N.
func (g *DiagGaussian) InputSize() int { return 2 * g.N }

// ActionSize returns N.
func (g *DiagGaussian) ActionSize() int { return g.N }

// Sample draws mean + exp(log_std) * N(0, 1) per element.
func (g *DiagGaussian) Sample(rng *rand.Rand, in, action []float32) float64 {
	checkLen("DiagGaussian.Sample", "in", len(in), 2*g.N)
	checkLen("DiagGaussian.Sample", "action", len(action), g.N)
	lp := 0.0
	for i := range g.N {
		ls := float64(in[g.N+i])
		z := rng.NormFloat64()
		action[i] = float32(float64(in[i]) + math.Exp(ls)*z)
		// The density of the float32 action, not of z, so that LogProb agrees exactly.
		d := (float64(action[i]) - float64(in[i])) / math.Exp(ls)
		lp += -0.5*d*d - ls - halfLog2Pi
	}
	return lp
}

// Mode writes the mean.
func (g *DiagGaussian) Mode(in, action []float32) float64 {
	checkLen("DiagGaussian.Mode", "in", len(in), 2*g.N)
	checkLen("DiagGaussian.Mode", "action", len(action), g.N)
	copy(action, in[:g.N])
	lp := 0.0
	for i := range g.N {
		lp += -float64(in[g.N+i]) - halfLog2Pi
	}
	return lp
}

// LogProb returns the log-density of action.
func (g *DiagGaussian) LogProb(in, action []float32) float64 {
	checkLen("DiagGaussian.LogProb", "in", len(in), 2*g.N)
	checkLen("DiagGaussian.LogProb", "action", len(action), g.N)
	lp := 0.0
	for i := range g.N {
		ls := float64(in[g.N+i])
		d := (float64(action[i]) - float64(in[i])) / math.Exp(ls)
		lp += -0.5*d*d - ls - halfLog2Pi
	}
	return lp
}

// Entropy returns sum(log_std + 0.5 + 0.5 log 2 pi).
func (g *DiagGaussian) Entropy(in []float32) float64 {
	checkLen("DiagGaussian.Entropy", "in", len(in), 2*g.N)
	h := 0.0
	for i := range g.N {
		h += float64(in[g.N+i]) + 0.5 + halfLog2Pi
	}
	return h
}

// Deterministic is the point mass at its input: the model's output is the action (RLlib's
// TorchDeterministic). Its log-probability is 0 and its entropy 0.
type Deterministic struct {
	N int
}

// Name returns "deterministic".
func (d *Deterministic) Name() string { return models.Deterministic }

// InputSize returns N.
func (d *Deterministic) InputSize() int { return d.N }

// ActionSize returns N.
func (d *Deterministic) ActionSize() int { return d.N }

// Sample copies in (exploration does not change a deterministic action).
func (d *Deterministic) Sample(_ *rand.Rand, in, action []float32) float64 {
	return d.Mode(in, action)
}

// Mode copies in to action.
func (d *Deterministic) Mode(in, action []float32) float64 {
	checkLen("Deterministic.Mode", "in", len(in), d.N)
	checkLen("Deterministic.Mode", "action", len(action), d.N)
	copy(action, in)
	return 0
}

// LogProb returns 0.
func (d *Deterministic) LogProb(in, action []float32) float64 { return 0 }

// Entropy returns 0.
func (d *Deterministic) Entropy(in []float32) float64 { return 0 }
