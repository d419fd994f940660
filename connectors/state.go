package connectors

import (
	"fmt"

	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

// StateBuffer keeps each agent's RNN states between steps: one vector per state input per
// slot, zero at the start of an episode, gathered into the session's state inputs along the
// model's batch axis before Run and scattered back from the state outputs after it.
//
// A state's vector holds one batch row of the state tensor in row-major order without the
// batch axis: for PyTorch's [layers, batch, hidden] that is layers chunks of hidden values.
type StateBuffer struct {
	pairs []models.StatePair
	rows  []int       // values per agent, per state
	bufs  [][]float32 // per state: slot-major vectors
	ins   []*inference.Tensor
	outs  []*inference.Tensor
}

// NewStateBuffer returns the buffer for the policy's state pairs. Every state input needs a
// fixed size apart from its batch axis.
func NewStateBuffer(p *models.Policy) (*StateBuffer, error) {
	b := &StateBuffer{pairs: p.Spec.State}
	for _, sp := range p.Spec.State {
		in, ok := p.Model.Input(sp.Input)
		if !ok {
			return nil, fmt.Errorf("connectors: the model has no state input %q", sp.Input)
		}
		out, ok := p.Model.Output(sp.Output)
		if !ok {
			return nil, fmt.Errorf("connectors: the model has no state output %q", sp.Output)
		}
		w := rowInfo(in)
		if w <= 0 {
			return nil, fmt.Errorf("connectors: state input %s has dynamic dimensions besides the batch", in)
		}
		if w > inference.MaxTensorElements {
			return nil, fmt.Errorf("connectors: state input %s has more than %d values per row", in, inference.MaxTensorElements)
		}
		if wo := rowInfo(out); wo >= 0 && wo != w {
			return nil, &ShapeError{What: fmt.Sprintf("state output %q vs state input %q", out.Name, in.Name),
				Want: fmt.Sprintf("%s (%d values per row)", in.ShapeString(), w), Got: fmt.Sprintf("%s (%d values per row)", out.ShapeString(), wo)}
		}
		b.rows = append(b.rows, w)
		b.bufs = append(b.bufs, nil)
	}
	return b, nil
}

// Len returns the number of states.
func (b *StateBuffer) Len() int { return len(b.rows) }

// Reset zeroes the agent's states (start of an episode), growing the storage for a new slot.
func (b *StateBuffer) Reset(slot int) {
	for s, w := range b.rows {
		b.bufs[s] = growTo(b.bufs[s], slot, w)
		clear(b.bufs[s][slot*w : (slot+1)*w])
	}
}

// Row returns state s of the agent in slot (aliasing the buffer).
func (b *StateBuffer) Row(s, slot int) []float32 {
	w := b.rows[s]
	return b.bufs[s][slot*w : (slot+1)*w]
}

// Bind finds the session's state tensors once and checks them.
func (b *StateBuffer) Bind(sess *inference.Session) error {
	b.ins, b.outs = b.ins[:0], b.outs[:0]
	for s, sp := range b.pairs {
		in, err := sess.Input(sp.Input)
		if err != nil {
			return err
		}
		out, err := sess.Output(sp.Output)
		if err != nil {
			return err
		}
		for _, t := range []*inference.Tensor{in, out} {
			if t.Info.ElemType != inference.ElemFloat32 {
				return fmt.Errorf("connectors: state tensor %q holds %s, want float32", t.Info.Name, t.Info.ElemType)
			}
			if t.BatchAxis < 0 {
				return fmt.Errorf("connectors: state tensor %q has no batch axis", t.Info.Name)
			}
			if t.RowSize() != b.rows[s] {
				return &ShapeError{What: fmt.Sprintf("state tensor %q", t.Info.Name), Want: fmt.Sprintf("%d values per row", t.RowSize()),
					Got: fmt.Sprintf("%d values per row", b.rows[s])}
			}
		}
		b.ins, b.outs = append(b.ins, in), append(b.outs, out)
	}
	return nil
}

// Gather writes the states of the agents in slots (slots[i] is batch row i) into the bound
// state inputs, at the session's current batch size (len(slots)).
func (b *StateBuffer) Gather(slots []int) {
	for s, t := range b.ins {
		GatherRows(t.Float32(), t.Outer(), t.Inner(), b.bufs[s], slots)
	}
}

// Scatter reads the bound state outputs of the last Run back into the agents' states.
func (b *StateBuffer) Scatter(slots []int) {
	for s, t := range b.outs {
		ScatterRows(b.bufs[s], t.Outer(), t.Inner(), t.Float32(), slots)
	}
}

// GatherRows writes, for each batch row i, the vector of slot slots[i] in src (slot-major,
// outer*inner values per slot) into dst laid out as [outer, batch, inner] (the batch axis
// between the outer and inner dimensions): chunk k of row i goes to (k*batch+i)*inner.
func GatherRows(dst []float32, outer, inner int, src []float32, slots []int) {
	batch := len(slots)
	checkLen("GatherRows", "dst", len(dst), outer*batch*inner)
	w := outer * inner
	for i, slot := range slots {
		v := src[slot*w : (slot+1)*w]
		for k := range outer {
			copy(dst[(k*batch+i)*inner:(k*batch+i+1)*inner], v[k*inner:(k+1)*inner])
		}
	}
}

// ScatterRows is the inverse of GatherRows: it reads row i of src ([outer, batch, inner])
// into the vector of slot slots[i] in dst.
func ScatterRows(dst []float32, outer, inner int, src []float32, slots []int) {
	batch := len(slots)
	checkLen("ScatterRows", "src", len(src), outer*batch*inner)
	w := outer * inner
	for i, slot := range slots {
		v := dst[slot*w : (slot+1)*w]
		for k := range outer {
			copy(v[k*inner:(k+1)*inner], src[(k*batch+i)*inner:(k*batch+i+1)*inner])
		}
	}
}
