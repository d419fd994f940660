package arrowbatch

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/spaces"
)

// ActionKind is the Arrow type of the actions column.
type ActionKind int

const (
	// RealActions are rows of float32 (Box and the other real spaces).
	RealActions ActionKind = iota
	// IntActions are one int64 per row (Discrete).
	IntActions
	// IntVectorActions are rows of int64 (MultiDiscrete, MultiBinary).
	IntVectorActions
)

// Layout is what fixes a record's schema: the widths of the vector columns and which optional
// columns there are.
type Layout struct {
	ObsWidth, ActionWidth, DistWidth int
	Actions                          ActionKind
	StateWidths                      []int
	// The optional scalar columns.
	ActionLogp, VfPreds, Advantages, ValueTargets bool
}

// Equal reports whether l and o give the same schema.
func (l Layout) Equal(o Layout) bool {
	return l.ObsWidth == o.ObsWidth && l.ActionWidth == o.ActionWidth && l.DistWidth == o.DistWidth &&
		l.Actions == o.Actions && slices.Equal(l.StateWidths, o.StateWidths) &&
		l.ActionLogp == o.ActionLogp && l.VfPreds == o.VfPreds &&
		l.Advantages == o.Advantages && l.ValueTargets == o.ValueTargets
}

// String describes the layout for error messages.
func (l Layout) String() string {
	s := fmt.Sprintf("obs %d, actions %d (%s), dist %d, states %v", l.ObsWidth, l.ActionWidth,
		[...]string{"real", "int", "int rows"}[l.Actions], l.DistWidth, l.StateWidths)
	for _, c := range []struct {
		name string
		on   bool
	}{{"action_logp", l.ActionLogp}, {"vf_preds", l.VfPreds}, {"advantages", l.Advantages}, {"value_targets", l.ValueTargets}} {
		if c.on {
			s += ", " + c.name
		}
	}
	return s
}

// BatchLayout returns the layout of one policy batch (which must have rows for the optional
// columns to count).
func BatchLayout(b *envrunner.SampleBatch) Layout {
	l := Layout{
		ObsWidth:     b.ObsWidth,
		ActionWidth:  b.ActionWidth,
		Actions:      actionKind(b.ActionSpace, b.ActionWidth),
		StateWidths:  b.StateWidths,
		ActionLogp:   len(b.ActionLogp) > 0,
		VfPreds:      len(b.VfPreds) > 0,
		Advantages:   len(b.Advantages) > 0,
		ValueTargets: len(b.ValueTargets) > 0,
	}
	if len(b.ActionDistInputs) > 0 {
		l.DistWidth = b.DistWidth
	}
	return l
}

// actionKind mirrors the JSON form: Discrete of width 1 a flat list of integers,
// MultiDiscrete, MultiBinary (and a wider Discrete) rows of integers, the rest rows of floats.
func actionKind(s spaces.Space, w int) ActionKind {
	switch s.(type) {
	case *spaces.Discrete:
		if w == 1 {
			return IntActions
		}
		return IntVectorActions
	case *spaces.MultiDiscrete, *spaces.MultiBinary:
		return IntVectorActions
	}
	return RealActions
}

// LayoutOf returns the layout shared by the policies of m that have rows, and false when no
// policy has rows. Policies of different layouts cannot share one schema: that is an error
// naming both.
func LayoutOf(m *envrunner.MultiAgentBatch) (Layout, bool, error) {
	var l Layout
	var first string
	found := false
	for _, id := range policyIDs(m, nil) {
		if b := m.PolicyBatches[id]; b.StatePerSequence && len(b.SeqLens) != b.Count {
			return Layout{}, false, fmt.Errorf("arrowbatch: policy %q holds state_in per sequence (RLlib's layout, envrunner.Config.StatePerSequence), and a record has a row per transition: write JSON lines, or keep state_in per row", id)
		}
		bl := BatchLayout(m.PolicyBatches[id])
		if !found {
			l, first, found = bl, id, true
			continue
		}
		if !bl.Equal(l) {
			return Layout{}, false, fmt.Errorf("arrowbatch: policies %q (%s) and %q (%s) have different columns; one record holds one layout (write JSON lines, or one file per policy)",
				first, l, id, bl)
		}
	}
	return l, found, nil
}

// policyIDs appends the sorted ids of the policies of m with rows to dst.
func policyIDs(m *envrunner.MultiAgentBatch, dst []string) []string {
	for id, b := range m.PolicyBatches {
		if b != nil && b.Count > 0 {
			dst = append(dst, id)
		}
	}
	slices.Sort(dst)
	return dst
}

// Column names.
const (
	ColObs              = "obs"
	ColNewObs           = "new_obs"
	ColActions          = "actions"
	ColRewards          = "rewards"
	ColTerminateds      = "terminateds"
	ColTruncateds       = "truncateds"
	ColEpsID            = "eps_id"
	ColEnvID            = "env_id"
	ColAgentID          = "agent_id"
	ColAgentIndex       = "agent_index"
	ColModuleID         = "module_id"
	ColT                = "t"
	ColInfos            = "infos"
	ColActionDistInputs = "action_dist_inputs"
	ColActionLogp       = "action_logp"
	ColVfPreds          = "vf_preds"
	ColSeqLens          = "seq_lens"
	ColAdvantages       = "advantages"
	ColValueTargets     = "value_targets"
)

// StateInName and StateOutName name the columns of RNN state k.
func StateInName(k int) string  { return "state_in_" + strconv.Itoa(k) }
func StateOutName(k int) string { return "state_out_" + strconv.Itoa(k) }

// floatRows is the type of a column of rows of w float32 values. Arrow has no fixed-size list
// of zero values: rows of width 0 are a list<float32> of empty lists.
func floatRows(w int) arrow.DataType {
	if w == 0 {
		return arrow.ListOfNonNullable(arrow.PrimitiveTypes.Float32)
	}
	return arrow.FixedSizeListOfNonNullable(int32(w), arrow.PrimitiveTypes.Float32)
}

// Schema returns the schema of records of layout l, with meta as its key-value metadata
// (nil for none).
func Schema(l Layout, meta map[string]string) *arrow.Schema {
	f32 := arrow.PrimitiveTypes.Float32
	i32 := arrow.PrimitiveTypes.Int32
	var act arrow.DataType
	switch l.Actions {
	case IntActions:
		act = arrow.PrimitiveTypes.Int64
	case IntVectorActions:
		act = arrow.FixedSizeListOfNonNullable(int32(l.ActionWidth), arrow.PrimitiveTypes.Int64)
	default:
		act = floatRows(l.ActionWidth)
	}
	fields := []arrow.Field{
		{Name: ColObs, Type: floatRows(l.ObsWidth)},
		{Name: ColNewObs, Type: floatRows(l.ObsWidth)},
		{Name: ColActions, Type: act},
		{Name: ColRewards, Type: f32},
		{Name: ColTerminateds, Type: arrow.FixedWidthTypes.Boolean},
		{Name: ColTruncateds, Type: arrow.FixedWidthTypes.Boolean},
		{Name: ColEpsID, Type: arrow.PrimitiveTypes.Int64},
		{Name: ColEnvID, Type: i32},
		{Name: ColAgentID, Type: arrow.BinaryTypes.String},
		{Name: ColAgentIndex, Type: i32},
		{Name: ColModuleID, Type: arrow.BinaryTypes.String},
		{Name: ColT, Type: i32},
		// Each row's info as a JSON object, null for a row without one: the one column with
		// nulls.
		{Name: ColInfos, Type: arrow.BinaryTypes.String, Nullable: true},
	}
	if l.DistWidth > 0 {
		fields = append(fields, arrow.Field{Name: ColActionDistInputs, Type: floatRows(l.DistWidth)})
	}
	if l.ActionLogp {
		fields = append(fields, arrow.Field{Name: ColActionLogp, Type: f32})
	}
	if l.VfPreds {
		fields = append(fields, arrow.Field{Name: ColVfPreds, Type: f32})
	}
	for k, w := range l.StateWidths {
		fields = append(fields, arrow.Field{Name: StateInName(k), Type: floatRows(w)})
	}
	for k, w := range l.StateWidths {
		fields = append(fields, arrow.Field{Name: StateOutName(k), Type: floatRows(w)})
	}
	if len(l.StateWidths) > 0 {
		fields = append(fields, arrow.Field{Name: ColSeqLens, Type: i32})
	}
	if l.Advantages {
		fields = append(fields, arrow.Field{Name: ColAdvantages, Type: f32})
	}
	if l.ValueTargets {
		fields = append(fields, arrow.Field{Name: ColValueTargets, Type: f32})
	}
	var md *arrow.Metadata
	if len(meta) > 0 {
		keys := make([]string, 0, len(meta))
		for k := range meta {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		vals := make([]string, len(keys))
		for i, k := range keys {
			vals[i] = meta[k]
		}
		m := arrow.NewMetadata(keys, vals)
		md = &m
	}
	return arrow.NewSchema(fields, md)
}
