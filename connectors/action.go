package connectors

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/spaces"
)

// ActionConfig chooses how actions are computed from the distribution.
type ActionConfig struct {
	// Explore samples from the distribution; otherwise the mode (argmax, mean) is taken.
	Explore bool
	// NormalizeActions (RLlib's normalize_actions) treats the policy's Box actions as living
	// in [-1, 1] and maps them to the action space's bounds: low + (a+1)*(high-low)/2 after
	// clipping a to [-1, 1]. Elements with an infinite bound are passed through.
	NormalizeActions bool
	// ClipActions (RLlib's clip_actions) clips Box actions to the action space's bounds.
	ClipActions bool
	// SkipLogp, when not exploring, leaves out the log-probability of the mode (LogP then
	// returns 0): a greedy run that records no training data saves its cost.
	SkipLogp bool
}

// modeRows is implemented by distributions whose mode is cheaper without its
// log-probability: ModeRows writes the mode of each of rows rows of inputs.
type modeRows interface {
	ModeRows(in, actions []float32, rows int)
}

// ActionPipeline turns one batch of distribution inputs into actions. Its buffers hold one
// batch of results, valid until the next Compute.
//
// An ActionPipeline is owned by one goroutine (the runner's).
type ActionPipeline struct {
	dist     Distribution
	space    spaces.Space
	cfg      ActionConfig
	box      *spaces.Box // nil unless unsquash or clip applies
	capacity int

	batch      int
	policy     []float32 // actions as the policy produced them (training data)
	actions    []float32 // actions for the environment (unsquashed, clipped)
	logp       []float32
	distInputs []float32
	scratch    []float32    // a float32 copy of an integer action output
	two        *Categorical // dist when it is a Categorical of two logits (computed in bulk)
	twoBuf     []float64    // scratch of sampleTwoRows and modeTwoRows

	// Bound session tensors (BindSession).
	out, logStd *inference.Tensor
}

// NewActionPipeline returns a pipeline for batches of up to capacity rows of the
// distribution's inputs, producing actions of the action space.
func NewActionPipeline(dist Distribution, action spaces.Space, cfg ActionConfig, capacity int) (*ActionPipeline, error) {
	if capacity < 1 {
		return nil, fmt.Errorf("connectors: action pipeline capacity %d, want >= 1", capacity)
	}
	if action.Size() != dist.ActionSize() {
		return nil, &ShapeError{What: "action space vs distribution " + dist.Name(),
			Want: fmt.Sprintf("%d action values", dist.ActionSize()), Got: fmt.Sprintf("%s (%d values)", spaces.String(action), action.Size())}
	}
	p := &ActionPipeline{dist: dist, space: action, cfg: cfg, capacity: capacity}
	if b, ok := action.(*spaces.Box); ok && (cfg.NormalizeActions || cfg.ClipActions) {
		p.box = b
	}
	n, w := dist.ActionSize(), dist.InputSize()
	p.policy = make([]float32, capacity*n)
	p.actions = p.policy
	if p.box != nil {
		p.actions = make([]float32, capacity*n)
	}
	p.logp = make([]float32, capacity)
	p.distInputs = make([]float32, capacity*w)
	if c, ok := dist.(*Categorical); ok && c.N == 2 {
		p.two, p.twoBuf = c, make([]float64, 2*capacity)
	}
	return p, nil
}

// Distribution returns the pipeline's distribution.
func (p *ActionPipeline) Distribution() Distribution { return p.dist }

// Compute computes the actions of batch rows from the action output out (batch rows of the
// model's action output) and, for a diag_gaussian with a separate log_std output, logStd
// (batch rows of N, or one row of N shared by all rows); logStd is nil otherwise. It draws
// from rng when exploring. It allocates nothing.
func (p *ActionPipeline) Compute(rng *rand.Rand, batch int, out, logStd []float32) {
	if batch < 0 || batch > p.capacity {
		panic(fmt.Sprintf("connectors: ActionPipeline.Compute: batch %d, capacity %d", batch, p.capacity))
	}
	w, n := p.dist.InputSize(), p.dist.ActionSize()
	p.batch = batch
	di := p.distInputs[:batch*w]
	if logStd == nil {
		checkLen("ActionPipeline.Compute", "out", len(out), batch*w)
		copy(di, out)
	} else {
		checkLen("ActionPipeline.Compute", "out", len(out), batch*n)
		shared := len(logStd) == n
		if !shared {
			checkLen("ActionPipeline.Compute", "logStd", len(logStd), batch*n)
		}
		for i := range batch {
			copy(di[i*w:i*w+n], out[i*n:(i+1)*n])
			ls := logStd
			if !shared {
				ls = logStd[i*n : (i+1)*n]
			}
			copy(di[i*w+n:(i+1)*w], ls)
		}
	}
	skip := !p.cfg.Explore && p.cfg.SkipLogp
	if mo, ok := p.dist.(modeRows); ok && skip {
		mo.ModeRows(di, p.policy[:batch*n], batch)
	} else {
		p.computeRows(rng, di, batch)
	}
	if skip {
		clear(p.logp[:batch])
	}
	if p.box != nil {
		for i := range batch {
			p.transform(p.actions[i*n:(i+1)*n], p.policy[i*n:(i+1)*n])
		}
	}
}

// computeRows samples or takes the mode of each row, with its log-probability.
func (p *ActionPipeline) computeRows(rng *rand.Rand, di []float32, batch int) {
	if p.two != nil {
		if p.cfg.Explore {
			sampleTwoRows(rng, di, p.two.Start, p.policy[:batch], p.logp[:batch], p.twoBuf)
		} else {
			modeTwoRows(di, p.two.Start, p.policy[:batch], p.logp[:batch], p.twoBuf)
		}
		return
	}
	w, n := p.dist.InputSize(), p.dist.ActionSize()
	for i := range batch {
		in, a := di[i*w:(i+1)*w], p.policy[i*n:(i+1)*n]
		var lp float64
		if p.cfg.Explore {
			lp = p.dist.Sample(rng, in, a)
		} else {
			lp = p.dist.Mode(in, a)
		}
		p.logp[i] = float32(lp)
	}
}

// transform unsquashes and clips one Box action.
func (p *ActionPipeline) transform(dst, a []float32) {
	lo, hi := p.box.Low, p.box.High
	for j, v := range a {
		l, h := float64(lo[j]), float64(hi[j])
		x := float64(v)
		if p.cfg.NormalizeActions && !math.IsInf(l, 0) && !math.IsInf(h, 0) {
			x = max(-1, min(1, x))
			x = l + (x+1)*(h-l)/2
		}
		if p.cfg.ClipActions || p.cfg.NormalizeActions {
			x = max(l, min(h, x))
		}
		dst[j] = float32(x)
	}
}

// Unsquash maps a policy action in [-1, 1] to the Box bounds as RLlib's normalize_actions
// does (clip to [-1, 1], then low + (a+1)*(high-low)/2); elements with an infinite bound
// are copied. It writes dst and returns it.
func Unsquash(dst, a []float32, b *spaces.Box) []float32 {
	p := ActionPipeline{box: b, cfg: ActionConfig{NormalizeActions: true}}
	p.transform(dst, a)
	return dst
}

// Batch returns the number of rows of the last Compute.
func (p *ActionPipeline) Batch() int { return p.batch }

// Action returns row i's action for the environment (after unsquash and clip), in the raw
// layout of the action space.
func (p *ActionPipeline) Action(i int) []float32 {
	n := p.dist.ActionSize()
	return p.actions[i*n : (i+1)*n]
}

// PolicyAction returns row i's action as the policy produced it, before unsquash and clip:
// the "actions" column of the sample batch, as RLlib keeps it.
func (p *ActionPipeline) PolicyAction(i int) []float32 {
	n := p.dist.ActionSize()
	return p.policy[i*n : (i+1)*n]
}

// Actions returns the environment actions of the last batch, ActionSize values per row.
func (p *ActionPipeline) Actions() []float32 { return p.actions[:p.batch*p.dist.ActionSize()] }

// PolicyActions returns the policy actions of the last batch, ActionSize values per row.
func (p *ActionPipeline) PolicyActions() []float32 { return p.policy[:p.batch*p.dist.ActionSize()] }

// LogPs returns the log-probabilities of the last batch, one per row.
func (p *ActionPipeline) LogPs() []float32 { return p.logp[:p.batch] }

// AllDistInputs returns the distribution inputs of the last batch, InputSize values per row.
func (p *ActionPipeline) AllDistInputs() []float32 { return p.distInputs[:p.batch*p.dist.InputSize()] }

// LogP returns row i's action log-probability ("action_logp").
func (p *ActionPipeline) LogP(i int) float32 { return p.logp[i] }

// DistInputs returns row i's distribution inputs ("action_dist_inputs"; for diag_gaussian the
// mean followed by the log_std).
func (p *ActionPipeline) DistInputs(i int) []float32 {
	w := p.dist.InputSize()
	return p.distInputs[i*w : (i+1)*w]
}

// Unbatch appends the environment action of each row i to dst, addressed to keys[i], and
// returns dst. The action slices alias the pipeline's buffers (valid until the next Compute).
// It allocates only when dst has to grow.
func (p *ActionPipeline) Unbatch(dst []env.Action, keys []AgentKey) []env.Action {
	for i := range p.batch {
		dst = append(dst, env.Action{Env: keys[i].Env, Agent: keys[i].Agent, Action: p.Action(i)})
	}
	return dst
}

// BindSession finds the action output (and the log_std output, "" for none) of sess once, for
// ComputeSession. The tensors must hold float32, or int32/int64 for a deterministic action.
func (p *ActionPipeline) BindSession(sess *inference.Session, actionOutput, logStdOutput string) error {
	out, err := sess.Output(actionOutput)
	if err != nil {
		return err
	}
	switch out.Info.ElemType {
	case inference.ElemFloat32:
	case inference.ElemInt32, inference.ElemInt64:
		if _, ok := p.dist.(*Deterministic); !ok {
			return fmt.Errorf("connectors: action output %q holds %s; distribution %s needs float32", actionOutput, out.Info.ElemType, p.dist.Name())
		}
		p.scratch = make([]float32, p.capacity*p.dist.InputSize())
	default:
		return fmt.Errorf("connectors: action output %q holds %s, want float32", actionOutput, out.Info.ElemType)
	}
	want := p.dist.InputSize()
	if logStdOutput != "" {
		want = p.dist.ActionSize()
	}
	if err := checkOutputRows(sess, out, "action output", want, false); err != nil {
		return err
	}
	p.out, p.logStd = out, nil
	if logStdOutput != "" {
		if p.logStd, err = sess.Output(logStdOutput); err != nil {
			return err
		}
		if p.logStd.Info.ElemType != inference.ElemFloat32 {
			return fmt.Errorf("connectors: log_std output %q holds %s, want float32", logStdOutput, p.logStd.Info.ElemType)
		}
		if err := checkOutputRows(sess, p.logStd, "log_std output", p.dist.ActionSize(), true); err != nil {
			p.out, p.logStd = nil, nil
			return err
		}
	}
	return nil
}

// checkOutputRows checks the shape the runtime really produces for output t (the session
// probes it when it is created) against the want values per batch row that the distribution
// reads: a model whose declared output shape is not its real one is an error here, not an
// index out of range at the first step. shared allows one row for the whole batch.
func checkOutputRows(sess *inference.Session, t *inference.Tensor, what string, want int, shared bool) error {
	if t.BatchAxis < 0 {
		if shared && t.Len() == want {
			return nil
		}
		if sess.Capacity() == 1 && t.Len() == want {
			return nil
		}
		return &ShapeError{What: fmt.Sprintf("%s %q (declared %s)", what, t.Info.Name, t.Info.ShapeString()),
			Want: fmt.Sprintf("%v, which has no batch axis", t.Shape()),
			Got:  fmt.Sprintf("batches of up to %d rows of %d values", sess.Capacity(), want)}
	}
	if t.RowSize() != want {
		return &ShapeError{What: fmt.Sprintf("%s %q (declared %s)", what, t.Info.Name, t.Info.ShapeString()),
			Want: fmt.Sprintf("%v, %d values per row, at batch %d", t.Shape(), t.RowSize(), sess.Batch()),
			Got:  fmt.Sprintf("%d values per row", want)}
	}
	return nil
}

// ComputeSession runs Compute on the bound outputs of the session's last Run.
func (p *ActionPipeline) ComputeSession(rng *rand.Rand, sess *inference.Session) {
	if p.out == nil {
		panic("connectors: ComputeSession before BindSession")
	}
	var out []float32
	switch p.out.Info.ElemType {
	case inference.ElemFloat32:
		out = p.out.Float32()
	case inference.ElemInt32:
		out = p.scratch[:p.out.Len()]
		for i, v := range p.out.Int32() {
			out[i] = float32(v)
		}
	case inference.ElemInt64:
		out = p.scratch[:p.out.Len()]
		for i, v := range p.out.Int64() {
			out[i] = float32(v)
		}
	}
	var ls []float32
	if p.logStd != nil {
		ls = p.logStd.Float32()
	}
	p.Compute(rng, sess.Batch(), out, ls)
}
