package connectors

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/onnxrl/sampler/spaces"
)

// flatOp is one leaf of a flattened space: copy n values, or one-hot one value into n slots.
type flatOp struct {
	oneHot bool
	n      int   // values copied, or the one-hot width
	start  int64 // one-hot: the value of the first slot
}

// flatPlan lists the leaves of a space in gymnasium's flatten order.
type flatPlan struct {
	ops        []flatOp
	size, flat int
}

func newFlatPlan(s spaces.Space) flatPlan {
	var p flatPlan
	p.add(s)
	return p
}

func (p *flatPlan) add(s spaces.Space) {
	switch s := s.(type) {
	case *spaces.Discrete:
		p.ops = append(p.ops, flatOp{oneHot: true, n: int(s.N), start: s.Start})
		p.size++
		p.flat += int(s.N)
	case *spaces.MultiDiscrete:
		for _, n := range s.Nvec {
			p.ops = append(p.ops, flatOp{oneHot: true, n: int(n)})
		}
		p.size += len(s.Nvec)
		p.flat += s.FlatDim()
	case *spaces.Dict:
		for _, c := range s.Spaces {
			p.add(c)
		}
	case *spaces.Tuple:
		for _, c := range s.Spaces {
			p.add(c)
		}
	default: // Box, MultiBinary: copied
		n := s.Size()
		if k := len(p.ops); k > 0 && !p.ops[k-1].oneHot {
			p.ops[k-1].n += n // merge neighbouring copies
		} else {
			p.ops = append(p.ops, flatOp{n: n})
		}
		p.size += n
		p.flat += n
	}
}

// copies reports whether the flatten is a plain copy.
func (p *flatPlan) copies() bool {
	return len(p.ops) == 0 || (len(p.ops) == 1 && !p.ops[0].oneHot && p.size == p.flat)
}

// run writes the flattened x into dst. A discrete value that is not one of the leaf's values
// (out of range, fractional, NaN) gives an all-zero one-hot instead of a panic.
func (p *flatPlan) run(dst, x []float32) {
	i, o := 0, 0
	for _, op := range p.ops {
		if !op.oneHot {
			copy(dst[o:o+op.n], x[i:i+op.n])
			i += op.n
			o += op.n
			continue
		}
		seg := dst[o : o+op.n]
		clear(seg)
		v := float64(x[i]) - float64(op.start)
		if v >= 0 && v < float64(op.n) && v == math.Floor(v) {
			seg[int(v)] = 1
		}
		i++
		o += op.n
	}
}

// Flatten is the agent connector that turns a raw observation of a space into gymnasium's
// flatten of it (spaces.Space.Flatten): Box and MultiBinary copied, Discrete and
// MultiDiscrete one-hot, Dict (sorted keys) and Tuple children in order. It must be the first
// connector of a pipeline over that space. A discrete value outside its space gives zeros.
type Flatten struct {
	space spaces.Space
	plan  flatPlan
}

// NewFlatten returns a Flatten for observations of s.
func NewFlatten(s spaces.Space) *Flatten { return &Flatten{space: s, plan: newFlatPlan(s)} }

// Name returns "flatten".
func (f *Flatten) Name() string { return "flatten" }

// Bind checks that in is the space's raw size and returns its flat dimension.
func (f *Flatten) Bind(in int) (int, error) {
	if in != f.plan.size {
		return 0, fmt.Errorf("flatten of %s takes %d values, got %d", spaces.String(f.space), f.plan.size, in)
	}
	return f.plan.flat, nil
}

// Reset does nothing.
func (f *Flatten) Reset(int) {}

// Transform flattens in into out.
func (f *Flatten) Transform(_ int, _ float64, in, out []float32) { f.plan.run(out, in) }

// Clip is the agent connector that clips every value to [Low[i], High[i]] (RLlib's
// ClipObs / clip to the observation space's bounds). NaN stays NaN.
type Clip struct {
	Low, High []float32
}

// NewClip clips every value to [low, high].
func NewClip(low, high float32) *Clip { return &Clip{Low: []float32{low}, High: []float32{high}} }

// NewClipBox clips to the bounds of a Box (per element, in its row-major order).
func NewClipBox(b *spaces.Box) *Clip { return &Clip{Low: b.Low, High: b.High} }

// Name returns "clip".
func (c *Clip) Name() string { return "clip" }

// Bind checks the bounds' length: one pair for all values, or one per value.
func (c *Clip) Bind(in int) (int, error) {
	if len(c.Low) != len(c.High) {
		return 0, fmt.Errorf("clip: %d low and %d high bounds", len(c.Low), len(c.High))
	}
	if len(c.Low) == 1 && in != 1 {
		lo, hi := c.Low[0], c.High[0]
		c.Low, c.High = make([]float32, in), make([]float32, in)
		for i := range in {
			c.Low[i], c.High[i] = lo, hi
		}
	}
	if len(c.Low) != in {
		return 0, fmt.Errorf("clip has %d bounds for rows of %d values", len(c.Low), in)
	}
	for i := range c.Low {
		if c.Low[i] > c.High[i] {
			return 0, fmt.Errorf("clip: low[%d] = %v > high[%d] = %v", i, c.Low[i], i, c.High[i])
		}
	}
	return in, nil
}

// Reset does nothing.
func (c *Clip) Reset(int) {}

// Transform clips in into out.
func (c *Clip) Transform(_ int, _ float64, in, out []float32) {
	lo, hi := c.Low[:len(in)], c.High[:len(in)]
	for i, v := range in {
		switch {
		case v < lo[i]:
			v = lo[i]
		case v > hi[i]:
			v = hi[i]
		}
		out[i] = v
	}
}

// RunningStat holds the count, mean and sum of squared deviations (M2) of a stream of
// vectors, updated with Welford's algorithm and merged with Chan et al.'s parallel formula.
type RunningStat struct {
	N    int64     `json:"n"`
	Mean []float64 `json:"mean"`
	M2   []float64 `json:"m2"`
}

// Push adds one vector.
func (s *RunningStat) Push(x []float32) {
	s.N++
	n := float64(s.N)
	for i, v := range x {
		d := float64(v) - s.Mean[i]
		s.Mean[i] += d / n
		s.M2[i] += d * (float64(v) - s.Mean[i])
	}
}

// Merge adds the stream summarized by o (same width): afterwards s summarizes both.
func (s *RunningStat) Merge(o *RunningStat) {
	if o.N == 0 {
		return
	}
	if s.N == 0 {
		s.N = o.N
		copy(s.Mean, o.Mean)
		copy(s.M2, o.M2)
		return
	}
	na, nb := float64(s.N), float64(o.N)
	n := na + nb
	for i := range s.Mean {
		d := o.Mean[i] - s.Mean[i]
		s.Mean[i] += d * nb / n
		s.M2[i] += o.M2[i] + d*d*na*nb/n
	}
	s.N += o.N
}

// Var returns the sample variance of element i as RLlib's RunningStat does: M2/(n-1) for
// n > 1, mean^2 for n == 1, 0 for n == 0.
func (s *RunningStat) Var(i int) float64 {
	switch {
	case s.N > 1:
		return s.M2[i] / float64(s.N-1)
	case s.N == 1:
		return s.Mean[i] * s.Mean[i]
	}
	return 0
}

// MeanStdFilter is the agent connector that keeps running statistics of every value and
// writes (x - mean) / (std + 1e-8), clipped to [-Clip, Clip] when Clip > 0 (RLlib's
// MeanStdFilter with demean and destd). Each observation updates the statistics first, as
// RLlib does, unless the filter is Frozen (evaluation).
//
// Its state (Stateful) is a RunningStat in JSON; MergeState combines another worker's
// statistics so that the result equals a filter that saw both streams. Workers that
// synchronize repeatedly should merge only what they saw since the last synchronization
// (Delta / ClearDelta), as RLlib's filter buffers do.
type MeanStdFilter struct {
	Clip   float64
	Frozen bool
	stat   RunningStat
	delta  RunningStat
}

// NewMeanStdFilter returns a filter that clips its output to [-clip, clip] (no clipping for
// clip <= 0; RLlib's default is 10).
func NewMeanStdFilter(clip float64) *MeanStdFilter { return &MeanStdFilter{Clip: clip} }

// Name returns "mean_std_filter".
func (f *MeanStdFilter) Name() string { return "mean_std_filter" }

// Bind sizes the statistics.
func (f *MeanStdFilter) Bind(in int) (int, error) {
	if f.stat.Mean == nil {
		f.stat = RunningStat{Mean: make([]float64, in), M2: make([]float64, in)}
	}
	if len(f.stat.Mean) != in {
		return 0, fmt.Errorf("mean_std_filter holds statistics of %d values, rows have %d", len(f.stat.Mean), in)
	}
	f.delta = RunningStat{Mean: make([]float64, in), M2: make([]float64, in)}
	return in, nil
}

// Reset does nothing: the statistics are shared by all agents.
func (f *MeanStdFilter) Reset(int) {}

// Transform updates the statistics with in (unless frozen, or in holds a non-finite value)
// and writes the normalized values into out.
func (f *MeanStdFilter) Transform(_ int, _ float64, in, out []float32) {
	if !f.Frozen && finite(in) {
		f.stat.Push(in)
		f.delta.Push(in)
	}
	for i, v := range in {
		y := (float64(v) - f.stat.Mean[i]) / (math.Sqrt(f.stat.Var(i)) + 1e-8)
		if f.Clip > 0 {
			y = max(-f.Clip, min(f.Clip, y))
		}
		out[i] = float32(y)
	}
}

func finite(x []float32) bool {
	for _, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return false
		}
	}
	return true
}

// Stat returns the running statistics (the filter's own; do not modify).
func (f *MeanStdFilter) Stat() *RunningStat { return &f.stat }

// Delta returns the statistics of what the filter saw since the last ClearDelta, as a state
// document for another worker's MergeState.
func (f *MeanStdFilter) Delta() ([]byte, error) { return json.Marshal(&f.delta) }

// ClearDelta forgets the data counted by Delta.
func (f *MeanStdFilter) ClearDelta() {
	f.delta.N = 0
	clear(f.delta.Mean)
	clear(f.delta.M2)
}

// State returns the statistics as JSON.
func (f *MeanStdFilter) State() ([]byte, error) { return json.Marshal(&f.stat) }

// SetState replaces the statistics.
func (f *MeanStdFilter) SetState(data []byte) error {
	s, err := f.decode(data)
	if err != nil {
		return err
	}
	f.stat = s
	return nil
}

// MergeState merges another filter's statistics into this one.
func (f *MeanStdFilter) MergeState(data []byte) error {
	s, err := f.decode(data)
	if err != nil {
		return err
	}
	f.stat.Merge(&s)
	return nil
}

func (f *MeanStdFilter) decode(data []byte) (RunningStat, error) {
	var s RunningStat
	if err := json.Unmarshal(data, &s); err != nil {
		return s, err
	}
	if len(s.Mean) != len(s.M2) || (f.stat.Mean != nil && len(s.Mean) != len(f.stat.Mean)) {
		return s, fmt.Errorf("mean_std_filter state has %d means and %d m2 for rows of %d values", len(s.Mean), len(s.M2), len(f.stat.Mean))
	}
	if s.N < 0 {
		return s, errors.New("mean_std_filter state has a negative count")
	}
	return s, nil
}

// FrameStack is the agent connector that writes the last N observations, oldest first. At the
// start of an episode the history is filled with the first observation (gymnasium's
// FrameStackObservation with padding "reset").
type FrameStack struct {
	N     int
	w     int
	hist  []float32 // per slot: N frames
	fresh []bool    // per slot: no frame yet in this episode
}

// NewFrameStack stacks the last n observations.
func NewFrameStack(n int) *FrameStack { return &FrameStack{N: n} }

// Name returns "frame_stack".
func (f *FrameStack) Name() string { return "frame_stack" }

// Bind returns N times the input width.
func (f *FrameStack) Bind(in int) (int, error) {
	if f.N < 1 {
		return 0, fmt.Errorf("frame_stack needs at least 1 frame, got %d", f.N)
	}
	f.w = in
	return f.N * in, nil
}

// Reset forgets the agent's frames.
func (f *FrameStack) Reset(slot int) {
	f.hist = growTo(f.hist, slot, f.N*f.w)
	for len(f.fresh) <= slot {
		f.fresh = append(f.fresh, true)
	}
	f.fresh[slot] = true
}

// Transform pushes in and writes the stack.
func (f *FrameStack) Transform(slot int, _ float64, in, out []float32) {
	w := f.w
	h := f.hist[slot*f.N*w : (slot+1)*f.N*w]
	if f.fresh[slot] {
		for k := range f.N {
			copy(h[k*w:(k+1)*w], in)
		}
		f.fresh[slot] = false
	} else {
		copy(h, h[w:])
		copy(h[(f.N-1)*w:], in)
	}
	copy(out, h)
}

// PrevActions is the agent connector that appends the agent's last N actions (flattened:
// Discrete and MultiDiscrete one-hot, as RLlib feeds previous actions to a model), oldest
// first, zeros before the first action of an episode. The runner reports actions through
// AgentPipeline.RecordAction.
type PrevActions struct {
	N     int
	space spaces.Space
	plan  flatPlan
	in    int
	hist  []float32 // per slot: N flattened actions
}

// NewPrevActions appends the last n actions of the action space.
func NewPrevActions(action spaces.Space, n int) *PrevActions {
	return &PrevActions{N: n, space: action, plan: newFlatPlan(action)}
}

// Name returns "prev_actions".
func (p *PrevActions) Name() string { return "prev_actions" }

// Bind returns the input width plus N flattened actions.
func (p *PrevActions) Bind(in int) (int, error) {
	if p.N < 1 {
		return 0, fmt.Errorf("prev_actions needs n >= 1, got %d", p.N)
	}
	p.in = in
	return in + p.N*p.plan.flat, nil
}

// Reset zeroes the agent's past actions.
func (p *PrevActions) Reset(slot int) {
	w := p.N * p.plan.flat
	p.hist = growTo(p.hist, slot, w)
	clear(p.hist[slot*w : (slot+1)*w])
}

// RecordAction pushes action (raw layout) into the agent's history.
func (p *PrevActions) RecordAction(slot int, action []float32) {
	if len(action) != p.plan.size {
		panic(fmt.Sprintf("connectors: PrevActions.RecordAction: len(action) = %d, want %d", len(action), p.plan.size))
	}
	fw := p.plan.flat
	h := p.hist[slot*p.N*fw : (slot+1)*p.N*fw]
	copy(h, h[fw:])
	p.plan.run(h[(p.N-1)*fw:], action)
}

// Transform copies in and appends the history.
func (p *PrevActions) Transform(slot int, _ float64, in, out []float32) {
	copy(out, in)
	w := p.N * p.plan.flat
	copy(out[p.in:], p.hist[slot*w:(slot+1)*w])
}

// PrevRewards is the agent connector that appends the agent's last N rewards, oldest first:
// the reward delivered with the current observation last, zeros before the episode's start
// (RLlib's prev_rewards).
type PrevRewards struct {
	N    int
	in   int
	hist []float32
}

// NewPrevRewards appends the last n rewards.
func NewPrevRewards(n int) *PrevRewards { return &PrevRewards{N: n} }

// Name returns "prev_rewards".
func (p *PrevRewards) Name() string { return "prev_rewards" }

// Bind returns the input width plus N.
func (p *PrevRewards) Bind(in int) (int, error) {
	if p.N < 1 {
		return 0, fmt.Errorf("prev_rewards needs n >= 1, got %d", p.N)
	}
	p.in = in
	return in + p.N, nil
}

// Reset zeroes the agent's past rewards.
func (p *PrevRewards) Reset(slot int) {
	p.hist = growTo(p.hist, slot, p.N)
	clear(p.hist[slot*p.N : (slot+1)*p.N])
}

// Transform pushes reward and appends the history to in. The first observation of an
// episode carries reward 0, so the history stays zero there.
func (p *PrevRewards) Transform(slot int, reward float64, in, out []float32) {
	copy(out, in)
	h := p.hist[slot*p.N : (slot+1)*p.N]
	copy(h, h[1:])
	h[p.N-1] = float32(reward)
	copy(out[p.in:], h)
}
