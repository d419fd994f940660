package arrowbatch

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/internal/infojson"
	"github.com/onnxrl/sampler/spaces"
)

// ToBatch reads a record of this package's schema (from Build, a Parquet file or Arrow IPC)
// back into a MultiAgentBatch with envSteps as its EnvSteps: the rows of each module_id
// become that policy's batch, in order. The action space is not in the record; integer
// actions get the stand-in space of StandInSpace, real ones none. Missing required columns,
// columns of other types and nulls are errors naming the column.
func ToBatch(rec arrow.RecordBatch, envSteps int) (*envrunner.MultiAgentBatch, error) {
	r := reader{rec: rec, n: int(rec.NumRows())}
	m := &envrunner.MultiAgentBatch{EnvSteps: envSteps, AgentSteps: r.n, PolicyBatches: map[string]*envrunner.SampleBatch{}}
	modCol, err := r.col(ColModuleID, true)
	if err != nil {
		return nil, err
	}
	mods, ok := modCol.(*array.String)
	if !ok {
		return nil, fmt.Errorf("arrowbatch: column %q is %s, want string", ColModuleID, modCol.DataType())
	}
	// Rows of each policy, in order of first appearance.
	var order []string
	rows := map[string][]int{}
	for i := range r.n {
		id := mods.Value(i)
		if _, ok := rows[id]; !ok {
			order = append(order, id)
		}
		rows[id] = append(rows[id], i)
	}
	for _, id := range order {
		b, err := r.batch(rows[id])
		if err != nil {
			return nil, fmt.Errorf("arrowbatch: policy %q: %w", id, err)
		}
		m.PolicyBatches[id] = b
	}
	return m, nil
}

type reader struct {
	rec arrow.RecordBatch
	n   int
}

// col returns the column named name, nil when it is missing and optional.
func (r *reader) col(name string, required bool) (arrow.Array, error) {
	idx := r.rec.Schema().FieldIndices(name)
	if len(idx) == 0 {
		if required {
			return nil, fmt.Errorf("arrowbatch: missing column %q", name)
		}
		return nil, nil
	}
	c := r.rec.Column(idx[0])
	if c.NullN() > 0 {
		return nil, fmt.Errorf("arrowbatch: column %q has %d nulls", name, c.NullN())
	}
	return c, nil
}

// floats returns the selected rows of a float32 column or of a fixed-size list of float32,
// and the row width (1 for a plain column).
func (r *reader) floats(name string, required bool, sel []int) ([]float32, int, bool, error) {
	c, err := r.col(name, required)
	if err != nil || c == nil {
		return nil, 0, false, err
	}
	vals, w, err := flatten(c, name)
	if err != nil {
		return nil, 0, false, err
	}
	f, ok := vals.(*array.Float32)
	if !ok {
		return nil, 0, false, fmt.Errorf("column %q holds %s, want float32", name, vals.DataType())
	}
	all := f.Float32Values()
	out := make([]float32, 0, len(sel)*w)
	for _, i := range sel {
		out = append(out, all[i*w:i*w+w]...)
	}
	return out, w, true, nil
}

// flatten returns the values of a primitive column, or the child values of a fixed-size list
// column lined up with its rows, and the row width.
func flatten(c arrow.Array, name string) (arrow.Array, int, error) {
	if l, ok := c.(*array.List); ok { // rows of one width (Parquet read without the Arrow schema)
		if l.Len() == 0 {
			return array.NewSlice(l.ListValues(), 0, 0), 0, nil
		}
		first, _ := l.ValueOffsets(0)
		s0, e0 := l.ValueOffsets(0)
		w := int(e0 - s0)
		for i := range l.Len() {
			if s, e := l.ValueOffsets(i); int(e-s) != w || int(s-first) != i*w {
				return nil, 0, fmt.Errorf("column %q has rows of different lengths (row %d: %d values, row 0: %d)", name, i, e-s, w)
			}
		}
		if l.ListValues().NullN() > 0 {
			return nil, 0, fmt.Errorf("column %q has null values", name)
		}
		if int(first)+l.Len()*w > l.ListValues().Len() {
			return nil, 0, fmt.Errorf("column %q has offsets beyond its values", name)
		}
		return array.NewSlice(l.ListValues(), first, first+int64(l.Len()*w)), w, nil
	}
	fl, ok := c.(*array.FixedSizeList)
	if !ok {
		return c, 1, nil
	}
	w := int(fl.DataType().(*arrow.FixedSizeListType).Len())
	if fl.ListValues().NullN() > 0 {
		return nil, 0, fmt.Errorf("column %q has null values", name)
	}
	off := fl.Data().Offset() * w
	return array.NewSlice(fl.ListValues(), int64(off), int64(off+fl.Len()*w)), w, nil
}

func (r *reader) ints(name string, sel []int) ([]int64, int, error) {
	c, err := r.col(name, true)
	if err != nil {
		return nil, 0, err
	}
	vals, w, err := flatten(c, name)
	if err != nil {
		return nil, 0, err
	}
	out := make([]int64, 0, len(sel)*w)
	switch v := vals.(type) {
	case *array.Int64:
		all := v.Int64Values()
		for _, i := range sel {
			out = append(out, all[i*w:i*w+w]...)
		}
	case *array.Int32:
		all := v.Int32Values()
		for _, i := range sel {
			for _, x := range all[i*w : i*w+w] {
				out = append(out, int64(x))
			}
		}
	default:
		return nil, 0, fmt.Errorf("column %q holds %s, want integers", name, vals.DataType())
	}
	return out, w, nil
}

func (r *reader) int32s(name string, sel []int) ([]int32, error) {
	v, w, err := r.ints(name, sel)
	if err != nil {
		return nil, err
	}
	if w != 1 {
		return nil, fmt.Errorf("column %q has rows of %d values, want one", name, w)
	}
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out, nil
}

func (r *reader) bools(name string, sel []int) ([]bool, error) {
	c, err := r.col(name, true)
	if err != nil {
		return nil, err
	}
	b, ok := c.(*array.Boolean)
	if !ok {
		return nil, fmt.Errorf("column %q is %s, want bool", name, c.DataType())
	}
	out := make([]bool, len(sel))
	for j, i := range sel {
		out[j] = b.Value(i)
	}
	return out, nil
}

// batch reads the rows sel into a SampleBatch, a group of columns at a time in the
// schema's order (see the package doc).
func (r *reader) batch(sel []int) (*envrunner.SampleBatch, error) {
	b := &envrunner.SampleBatch{Count: len(sel)}
	if err := r.transitions(b, sel); err != nil {
		return nil, err
	}
	if err := r.rowIDs(b, sel); err != nil {
		return nil, err
	}
	if err := r.optionalFloats(b, sel); err != nil {
		return nil, err
	}
	if err := r.states(b, sel); err != nil {
		return nil, err
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return b, nil
}

// transitions reads the columns of the transitions themselves: obs, new_obs, actions,
// rewards, terminateds and truncateds.
func (r *reader) transitions(b *envrunner.SampleBatch, sel []int) error {
	var err error
	if b.Obs, b.ObsWidth, _, err = r.floats(ColObs, true, sel); err != nil {
		return err
	}
	if b.NewObs, _, _, err = r.floats(ColNewObs, true, sel); err != nil {
		return err
	}
	if err := r.actions(b, sel); err != nil {
		return err
	}
	if b.Rewards, _, _, err = r.floats(ColRewards, true, sel); err != nil {
		return err
	}
	if b.Terminateds, err = r.bools(ColTerminateds, sel); err != nil {
		return err
	}
	b.Truncateds, err = r.bools(ColTruncateds, sel)
	return err
}

// rowIDs reads the columns that say where each row comes from (eps_id, env_id, agent_id,
// agent_index and t), and its infos.
func (r *reader) rowIDs(b *envrunner.SampleBatch, sel []int) error {
	var err error
	if b.EpsID, _, err = r.ints(ColEpsID, sel); err != nil {
		return err
	}
	if b.EnvID, err = r.int32s(ColEnvID, sel); err != nil {
		return err
	}
	if err := r.agents(b, sel); err != nil {
		return err
	}
	if b.T, err = r.int32s(ColT, sel); err != nil {
		return err
	}
	b.Infos, err = r.infos(sel)
	return err
}

// optionalFloats reads the optional float columns but the states' (action_dist_inputs,
// action_logp, vf_preds, advantages and value_targets); a missing one leaves its column
// nil.
func (r *reader) optionalFloats(b *envrunner.SampleBatch, sel []int) error {
	var w int
	var ok bool
	var err error
	if b.ActionDistInputs, w, ok, err = r.floats(ColActionDistInputs, false, sel); err != nil {
		return err
	} else if ok {
		b.DistWidth = w
	}
	for _, c := range []struct {
		name string
		dst  *[]float32
	}{{ColActionLogp, &b.ActionLogp}, {ColVfPreds, &b.VfPreds}, {ColAdvantages, &b.Advantages}, {ColValueTargets, &b.ValueTargets}} {
		if *c.dst, _, _, err = r.floats(c.name, false, sel); err != nil {
			return err
		}
	}
	return nil
}

// states reads the RNN state columns, state_in_K and state_out_K for K = 0, 1, ... up to
// the first missing state_in_K, and with them seq_lens (seqLens).
func (r *reader) states(b *envrunner.SampleBatch, sel []int) error {
	for k := 0; ; k++ {
		in, w, ok, err := r.floats(StateInName(k), false, sel)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		out, wo, ok, err := r.floats(StateOutName(k), true, sel)
		if err != nil {
			return err
		}
		if ok && wo != w {
			return fmt.Errorf("column %q has rows of %d values, want %d (the width of %q)", StateOutName(k), wo, w, StateInName(k))
		}
		b.StateWidths = append(b.StateWidths, w)
		b.StateIn = append(b.StateIn, in)
		b.StateOut = append(b.StateOut, out)
	}
	if len(b.StateWidths) == 0 {
		return nil
	}
	return r.seqLens(b, sel)
}

// seqLens reads seq_lens, which has a value per row (the length of a sequence on its first
// row, 0 on the others), and keeps the lengths: the batch's SeqLens, one per sequence.
func (r *reader) seqLens(b *envrunner.SampleBatch, sel []int) error {
	per, err := r.int32s(ColSeqLens, sel)
	if err != nil {
		return err
	}
	for _, l := range per {
		if l != 0 {
			b.SeqLens = append(b.SeqLens, l)
		}
	}
	return nil
}

// actions reads the actions column: integers become float32 values with a stand-in space.
func (r *reader) actions(b *envrunner.SampleBatch, sel []int) error {
	c, err := r.col(ColActions, true)
	if err != nil {
		return err
	}
	vals, w, err := flatten(c, ColActions)
	if err != nil {
		return err
	}
	if _, ok := vals.(*array.Float32); ok {
		b.Actions, b.ActionWidth, _, err = r.floats(ColActions, true, sel)
		return err
	}
	ints, w, err := r.ints(ColActions, sel)
	if err != nil {
		return err
	}
	b.ActionWidth = w
	b.Actions = make([]float32, len(ints))
	for i, v := range ints {
		b.Actions[i] = float32(v)
	}
	_, list := c.(*array.FixedSizeList)
	if _, ok := c.(*array.List); ok {
		list = true
	}
	if len(sel) > 0 {
		b.ActionSpace = StandInSpace(b.Actions, w, !list)
	}
	return nil
}

// StandInSpace returns a space that stands in for the unknown space of integer actions
// (width values a row; flat for one integer a row): a Discrete whose Start is the smallest
// action and N the span, or a MultiDiscrete with Nvec one more than the largest value of each
// element (at least 1). actions must not be empty.
func StandInSpace(actions []float32, width int, flat bool) spaces.Space {
	if flat {
		lo, hi := int64(actions[0]), int64(actions[0])
		for _, v := range actions {
			lo, hi = min(lo, int64(v)), max(hi, int64(v))
		}
		return &spaces.Discrete{N: hi - lo + 1, Start: lo}
	}
	nvec := make([]int64, width)
	for j := range nvec {
		nvec[j] = 1
	}
	for i, v := range actions {
		j := i % width
		nvec[j] = max(nvec[j], int64(v)+1)
	}
	return &spaces.MultiDiscrete{Nvec: nvec}
}

// infos reads the infos column (absent in files written before it): nil where a row's is
// null or {}, and no column at all when every selected row's is.
func (r *reader) infos(sel []int) ([]env.Info, error) {
	idx := r.rec.Schema().FieldIndices(ColInfos)
	if len(idx) == 0 {
		return nil, nil
	}
	c, ok := r.rec.Column(idx[0]).(*array.String)
	if !ok {
		return nil, fmt.Errorf("column %q is %s, want string", ColInfos, r.rec.Column(idx[0]).DataType())
	}
	if c.NullN() == c.Len() {
		return nil, nil
	}
	var out []env.Info
	for j, i := range sel {
		if c.IsNull(i) {
			continue
		}
		info, err := infojson.Decode([]byte(c.Value(i)))
		if err != nil {
			return nil, fmt.Errorf("column %q, row %d: %w", ColInfos, i, err)
		}
		if info != nil {
			if out == nil {
				out = make([]env.Info, len(sel))
			}
			out[j] = info
		}
	}
	return out, nil
}

// agents reads agent_id (strings) and agent_index. Files written before agent_id held the
// agent's id have no agent_index and the index in an integer agent_id: their AgentID stays
// empty.
func (r *reader) agents(b *envrunner.SampleBatch, sel []int) error {
	if idx, err := r.col(ColAgentIndex, false); err != nil {
		return err
	} else if idx == nil {
		b.AgentIndex, err = r.int32s(ColAgentID, sel)
		return err
	}
	var err error
	if b.AgentIndex, err = r.int32s(ColAgentIndex, sel); err != nil {
		return err
	}
	c, err := r.col(ColAgentID, true)
	if err != nil {
		return err
	}
	ids, ok := c.(*array.String)
	if !ok {
		return fmt.Errorf("column %q is %s, want string", ColAgentID, c.DataType())
	}
	b.AgentID = make([]string, len(sel))
	for j, i := range sel {
		b.AgentID[j] = ids.Value(i)
	}
	return nil
}
