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
//
// For N = 2 (and finite logits), Sample, Mode and LogProb compute exp and log with expNeg and
// fastLog1p rather than math.Exp and math.Log, within a few units in the last place of
// them, and agree with each other, and with the pipeline's bulk path, bit for bit.
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

// sampleTwo is sampleLogits for two logits, with one exp instead of two, and expNeg and
// fastLog1p in place of math.Exp and math.Log (lseTwo). So it is sampleLogits up to
// rounding: its probabilities are within a few 1e-16 (relative) of sampleLogits', so that
// the two draw different indices only for a uniform that close to the boundary between
// them, and its log-probability is within a few 1e-16 of sampleLogits' (relative to the
// larger logit's magnitude, or 1). A row that fails finiteTwo goes to sampleLogits itself.
func sampleTwo(rng *rand.Rand, l0, l1 float32) (int, float64) {
	a, b := float64(l0), float64(l1)
	if !finiteTwo(a, b) {
		return sampleLogits(rng, []float32{l0, l1})
	}
	z, lse := lseTwo(a, b)
	k := pickTwo(rng.Float64(), a, b, z)
	return k, [2]float64{a, b}[k] - lse
}

// lseTwo returns z = exp(min(a,b) - max(a,b)), the weight of the less likely logit, and
// lse = max(a,b) + log(1+z), the log-sum-exp of the two logits, for logits that pass
// finiteTwo, with expNeg and fastLog1p: bit for bit what lseTwoRows writes for the row, so
// that every user of the two-logit path (sampleTwo, sampleTwoRows, modeTwoRows, and
// Categorical's Mode and LogProb for N = 2) agrees with every other.
func lseTwo(a, b float64) (z, lse float64) {
	m := maxTwo(a, b)
	z = expNeg(math.Abs(a - b))
	return z, m + fastLog1p(z)
}

// maxTwo returns max(a, b) for a and b that are not NaN (a when b is NaN, NaN when a is).
// It is an integer select on the bits, a conditional move (see pickTwo), where the builtin
// max takes a branch-free but longer sequence that also orders -0 below +0 (which makes no
// difference to lseTwo: a tie gives log(1+z) = log 2, not 0).
func maxTwo(a, b float64) float64 {
	m, mb := math.Float64bits(a), math.Float64bits(b)
	if b > a {
		m = mb
	}
	return math.Float64frombits(m)
}

// finiteTwo reports whether two logits take pickTwo's path (otherwise sampleLogits').
func finiteTwo(a, b float64) bool {
	m := max(a, b)
	return !math.IsInf(m, 0) && !math.IsNaN(m) && !math.IsNaN(a) && !math.IsNaN(b)
}

// pickTwo returns the index (0 or 1) that sampleLogits' loop draws between the logits a and
// b, which pass finiteTwo, for the uniform f = rng.Float64(), given the weights it would have
// with z (in [0, 1], 1 on a tie, 0 for a -Inf logit) for the less likely logit and 1 for the
// likelier one. With z from lseTwo (expNeg, within a few 1e-16 of math.Exp), the draw is
// sampleLogits' but for f that close to the boundary between the two indices.
//
// It has no branch: a policy's two logits are often near 50/50, so that which one is larger,
// and which index is drawn, go either way at random, and a branch on either would be
// mispredicted about half the time. Index 0's weight is chosen by an integer select on its
// bits (a conditional move: the compiler emits one for an integer assigned in an if that
// does nothing else, not for a float) and the index is a comparison's flag (SETcc).
//
// sampleLogits passes over an index of weight 0, and this needs no test here: u = f*(e0+e1)
// with f in [0, 1), so when e0 = 0, u < e0 is false and index 1 is drawn, and when e1 = 0,
// e0 = 1 and u = f < e0, so index 0 is drawn, as sampleLogits draws them. (The two are
// never both 0: the likelier logit's weight is 1.)
func pickTwo(f, a, b, z float64) int {
	w0, zb := math.Float64bits(1), math.Float64bits(z)
	if a < b {
		w0 = zb // a is the less likely
	}
	e0 := math.Float64frombits(w0)
	// e0+e1 is z+1, 1+z, or 1+1 = 1+z on a tie (z = exp(0) = 1): always 1+z.
	u := f * (1 + z)
	k := 1
	if u < e0 {
		k = 0
	}
	return k
}

// lseTwoRows sets z[i] = exp(min(a,b) - max(a,b)) and lse[i] = max(a,b) + log(1+z[i]) for
// each row i of two logits a, b in in (len(z) rows), with expNeg and fastLog1p: bit for bit
// lseTwo(a, b) for a row that passes finiteTwo. lse[i] is finite exactly when it does: a
// NaN logit makes z and lse NaN, a +Inf one makes lse +Inf or NaN (Inf-Inf), two -Inf make
// z and lse NaN; otherwise the max is a finite float32, z is in [0, 1] (0 for a -Inf logit)
// and log(1+z) in [0, log 2].
//
// The exps and the logs of all rows are computed in loops of their own, so that the rows'
// long dependency chains overlap in the CPU instead of each row waiting on its own. The
// loops are written with the parts of expNeg and fastLog1p, which are inlined, rather than
// with the two functions, which are too large to be: with each call wrapped in a small
// function that was not inlined, math.Exp's calls measured about four times slower.
func lseTwoRows(in []float32, z, lse []float64) {
	lse = lse[:len(z)]
	for i := range z {
		row := in[2*i : 2*i+2 : 2*i+2]
		a, b := float64(row[0]), float64(row[1])
		lse[i] = maxTwo(a, b) // the max until the next loop adds log(1+z)
		r, scale := expNegReduce(math.Abs(a - b))
		z[i] = expNegFrac(r) * scale // expNeg
	}
	for i, zi := range z {
		s, mask := log1pReduce(zi)
		lse[i] += log1pHi(mask) + log1pPoly(s) // fastLog1p
	}
}

// isFinite reports whether x is neither infinite nor NaN.
func isFinite(x float64) bool { return math.Abs(x) <= math.MaxFloat64 }

// sampleTwoRows is sampleTwo over rows of two logits (in holds len(actions) rows), writing
// each row's action (index + start) and log-probability. The draws and log-probabilities are
// those of sampleTwo row by row, bit for bit (lseTwoRows computes lseTwo's values), in the
// same order from rng, one Float64 per row. scratch holds at least 2*len(actions) values.
//
// The exps and logs come first (lseTwoRows); the draw loop then has no branch that goes
// either way at random (see pickTwo): its one test, for a row that sampleTwo hands to
// sampleLogits, is not taken for a sane policy.
func sampleTwoRows(rng *rand.Rand, in []float32, start int64, actions, logp []float32, scratch []float64) {
	rows := len(actions)
	checkLen("sampleTwoRows", "in", len(in), 2*rows)
	checkLen("sampleTwoRows", "logp", len(logp), rows)
	z, lse := scratch[:rows], scratch[rows:2*rows]
	lseTwoRows(in, z, lse)
	for i := range rows {
		row := in[2*i : 2*i+2 : 2*i+2]
		if !isFinite(lse[i]) {
			k, lp := sampleLogits(rng, row)
			actions[i] = float32(int64(k) + start)
			logp[i] = float32(lp)
			continue
		}
		k := pickTwo(rng.Float64(), float64(row[0]), float64(row[1]), z[i])
		actions[i] = float32(int64(k) + start)
		logp[i] = float32(float64(row[k&1]) - lse[i]) // k&1: no bounds check
	}
}

// modeTwoRows is Categorical.Mode over rows of two logits (in holds len(actions) rows),
// writing each row's argmax (index + start, the first on ties) and its log-probability,
// bit for bit those of Mode. scratch holds at least 2*len(actions) values.
//
// As in sampleTwoRows, the exps and logs come first (lseTwoRows, with one exp per row where
// logSumExp takes two, and expNeg and fastLog1p as Mode uses them for two logits), and the
// argmax is a comparison's flag rather than a branch.
func modeTwoRows(in []float32, start int64, actions, logp []float32, scratch []float64) {
	rows := len(actions)
	checkLen("modeTwoRows", "in", len(in), 2*rows)
	checkLen("modeTwoRows", "logp", len(logp), rows)
	z, lse := scratch[:rows], scratch[rows:2*rows]
	lseTwoRows(in, z, lse)
	for i := range rows {
		row := in[2*i : 2*i+2 : 2*i+2]
		if !isFinite(lse[i]) {
			// Mode's own computation (logSumExp returns an infinite or NaN max as it is).
			k := argmax(row)
			actions[i] = float32(int64(k) + start)
			logp[i] = float32(float64(row[k]) - logSumExp(row))
			continue
		}
		// argmax: neither logit is NaN here.
		k := 0
		if row[1] > row[0] {
			k = 1
		}
		actions[i] = float32(int64(k) + start)
		logp[i] = float32(float64(row[k&1]) - lse[i])
	}
}

// Mode writes the argmax (the first on ties).
func (c *Categorical) Mode(in, action []float32) float64 {
	checkLen("Categorical.Mode", "in", len(in), c.N)
	checkLen("Categorical.Mode", "action", len(action), 1)
	i := argmax(in)
	action[0] = float32(int64(i) + c.Start)
	return float64(in[i]) - logSumExpCat(in)
}

// logSumExpCat is logSumExp, but for two logits that pass finiteTwo it is lseTwo's, so that
// Mode and LogProb agree with sampleTwo, sampleTwoRows and modeTwoRows bit for bit.
func logSumExpCat(in []float32) float64 {
	if len(in) == 2 {
		if a, b := float64(in[0]), float64(in[1]); finiteTwo(a, b) {
			_, lse := lseTwo(a, b)
			return lse
		}
	}
	return logSumExp(in)
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
	return float64(in[i]) - logSumExpCat(in)
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
