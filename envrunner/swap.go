package envrunner

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

// modelSwap is a new model for a policy, built and checked by SwapPolicy and waiting for the
// next batch boundary: its session and what is bound to it.
type modelSwap struct {
	id     PolicyID
	model  *models.Policy
	sess   *inference.Session
	obsT   *inference.Tensor
	valueT *inference.Tensor
	action *connectors.ActionPipeline
}

// swaps holds the model swaps waiting for a batch boundary, one per policy (a later swap of
// the same policy replaces an earlier one that has not taken effect). SwapPolicy adds to it
// from any goroutine; the runner's goroutine takes them.
type swaps struct {
	mu      sync.Mutex
	pending []*modelSwap
	closed  bool
}

// ErrSwapMismatch is wrapped by SwapPolicy's error when the new model does not fit the
// policy's batches or connectors (observation row, distribution, value output, RNN states).
var ErrSwapMismatch = errors.New("envrunner: the new model does not fit the policy")

// SwapPolicy replaces the model of policy id by model (a new version of it, as a learner
// publishes). It builds the new model's session on the calling goroutine, with the session
// options the policy was made with, and may be called from any goroutine, also while the
// runner steps (Group.Run). The swap takes effect at the next batch boundary: in the next
// Take (after the batch it hands over, which comes from the old model throughout), or at the
// next Step of a runner that builds no batches. Episodes keep running across it (no cut, no
// done flag); the agents keep their connector state and RNN states, and every later action
// comes from the new model. (The first row of an episode that goes on in the next batch holds
// the action taken in the step before the boundary, which the old model chose, as in RLlib
// when weights are set between two sample calls.) The old session is closed then (unless it was a
// PolicyConfig.SharedSession).
//
// The new model must fit what the runner already built: the same observation row width
// (after the agent connectors), distribution over the same action space, a value output
// if and only if the old one had one, and the same RNN state inputs and outputs (names and
// widths). Otherwise the error wraps ErrSwapMismatch and nothing changes.
func (r *Runner) SwapPolicy(id PolicyID, model *models.Policy) error {
	p := r.byID[id]
	switch {
	case p == nil:
		return fmt.Errorf("envrunner: SwapPolicy: no policy %q", id)
	case p.random:
		return fmt.Errorf("envrunner: SwapPolicy: policy %q is a random policy (no model to swap)", id)
	case model == nil:
		return fmt.Errorf("envrunner: SwapPolicy: policy %q: no model", id)
	}
	s, err := p.buildSwap(model)
	if err != nil {
		return fmt.Errorf("envrunner: SwapPolicy: policy %q: %w", id, err)
	}
	r.swaps.mu.Lock()
	defer r.swaps.mu.Unlock()
	if r.swaps.closed {
		s.sess.Close()
		return errClosed
	}
	for i, old := range r.swaps.pending {
		if old.id == id {
			old.sess.Close()
			r.swaps.pending[i] = s
			return nil
		}
	}
	r.swaps.pending = append(r.swaps.pending, s)
	r.swapsPending.Store(true)
	return nil
}

// buildSwap makes the session of a new model for p and checks it against p. It reads only
// what New set and nothing changes afterwards.
func (p *policy) buildSwap(model *models.Policy) (_ *modelSwap, err error) {
	spec := &model.Spec
	if err := p.checkSpec(spec); err != nil {
		return nil, err
	}
	sess, err := inference.NewSession(model.Model, p.sessOpts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			sess.Close()
		}
	}()
	s := &modelSwap{id: p.id, model: model, sess: sess}
	if sess.Capacity() != p.cap {
		return nil, fmt.Errorf("%w: session capacity %d, the policy's is %d", ErrSwapMismatch, sess.Capacity(), p.cap)
	}
	if err := p.bindTensors(s, spec); err != nil {
		return nil, err
	}
	if err := p.checkStates(model, sess); err != nil {
		return nil, err
	}
	dist, err := connectors.NewDistribution(spec.Distribution, p.act)
	if err != nil {
		return nil, err
	}
	if dist.InputSize() != p.distW {
		return nil, fmt.Errorf("%w: %d distribution inputs, the policy's are %d", ErrSwapMismatch, dist.InputSize(), p.distW)
	}
	if s.action, err = connectors.NewActionPipeline(dist, p.act, p.actionCfg, p.cap); err != nil {
		return nil, err
	}
	if err := s.action.BindSession(sess, spec.ActionOutput, spec.LogStdOutput); err != nil {
		return nil, err
	}
	return s, nil
}

// checkSpec checks what a new model's spec says against the policy: the distribution, a
// value output (the batches' vf_preds column) and the RNN states.
func (p *policy) checkSpec(spec *models.Spec) error {
	if spec.Distribution != p.distName {
		return fmt.Errorf("%w: distribution %s, the policy's is %s", ErrSwapMismatch, spec.Distribution, p.distName)
	}
	if (spec.ValueOutput != "") != p.hasValue {
		return fmt.Errorf("%w: value output %q, the policy has one: %v (the batches' vf_preds column)", ErrSwapMismatch, spec.ValueOutput, p.hasValue)
	}
	if !slices.Equal(spec.State, p.statePairs) {
		return fmt.Errorf("%w: RNN states %v, the policy's are %v", ErrSwapMismatch, spec.State, p.statePairs)
	}
	return nil
}

// bindTensors finds the new session's observation input and value output for s and checks
// their rows against the policy's.
func (p *policy) bindTensors(s *modelSwap, spec *models.Spec) (err error) {
	if s.obsT, err = s.sess.Input(spec.ObservationInput); err != nil {
		return err
	}
	if s.obsT.Info.ElemType != inference.ElemFloat32 || s.obsT.RowSize() != p.obsW {
		return fmt.Errorf("%w: observation input %q holds %d %s values per row, the policy's rows are %d float32 values",
			ErrSwapMismatch, s.obsT.Info.Name, s.obsT.RowSize(), s.obsT.Info.ElemType, p.obsW)
	}
	if !p.hasValue {
		return nil
	}
	if s.valueT, err = s.sess.Output(spec.ValueOutput); err != nil {
		return err
	}
	if s.valueT.Info.ElemType != inference.ElemFloat32 || s.valueT.RowSize() != 1 {
		return fmt.Errorf("%w: value output %q holds %d %s values per row, want 1 float32", ErrSwapMismatch,
			s.valueT.Info.Name, s.valueT.RowSize(), s.valueT.Info.ElemType)
	}
	return nil
}

// checkStates checks the new session's state inputs against the policy's widths and makes
// the checks the policy's state buffer makes when it binds the session at the swap (which
// then cannot fail), on a buffer of its own.
func (p *policy) checkStates(model *models.Policy, sess *inference.Session) error {
	for k, sp := range model.Spec.State {
		t, err := sess.Input(sp.Input)
		if err != nil {
			return err
		}
		if t.RowSize() != p.stateW[k] {
			return fmt.Errorf("%w: state input %q has %d values per row, the policy's has %d", ErrSwapMismatch, sp.Input, t.RowSize(), p.stateW[k])
		}
	}
	if len(model.Spec.State) == 0 {
		return nil
	}
	sb, err := connectors.NewStateBuffer(model)
	if err != nil {
		return err
	}
	return sb.Bind(sess)
}

// applySwaps puts the waiting model swaps into effect (at a batch boundary, on the runner's
// goroutine).
func (r *Runner) applySwaps() {
	r.swaps.mu.Lock()
	pending := r.swaps.pending
	r.swaps.pending = nil
	r.swapsPending.Store(false)
	r.swaps.mu.Unlock()
	for _, s := range pending {
		p := r.byID[s.id]
		if st := p.conn.State; st != nil {
			// The agents' states stay in the buffer; only the tensors it fills change.
			if err := st.Bind(s.sess); err != nil {
				panic(err) // checked by buildSwap on the same session
			}
		}
		if p.own {
			if err := p.sess.Close(); err != nil {
				r.log.Warn("envrunner: close the swapped-out session", "policy", p.id, "err", err)
			}
		}
		p.sess, p.own, p.obsT, p.valueT = s.sess, true, s.obsT, s.valueT
		p.conn.Action, p.conn.Policy = s.action, s.model
	}
}

// closeSwaps closes the sessions of swaps that never took effect; later SwapPolicy calls
// fail.
func (r *Runner) closeSwaps() error {
	r.swaps.mu.Lock()
	defer r.swaps.mu.Unlock()
	r.swaps.closed = true
	var errs []error
	for _, s := range r.swaps.pending {
		errs = append(errs, s.sess.Close())
	}
	r.swaps.pending = nil
	return errors.Join(errs...)
}
