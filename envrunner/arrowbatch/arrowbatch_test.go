package arrowbatch

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/spaces"
)

// lstmBatch is a batch shaped like the LSTM policy's: obs 4, Discrete(2), dist 2, two states
// of width 3, sequences of up to 5 rows.
func lstmBatch(rng *rand.Rand, n int) *envrunner.SampleBatch {
	b := &envrunner.SampleBatch{Count: n, ObsWidth: 4, ActionWidth: 1, DistWidth: 2,
		ActionSpace: &spaces.Discrete{N: 2}, StateWidths: []int{3, 3}, StateIn: make([][]float32, 2), StateOut: make([][]float32, 2)}
	f := func(k int) []float32 {
		v := make([]float32, k)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	b.Obs, b.NewObs, b.ActionDistInputs = f(4*n), f(4*n), f(2*n)
	b.Rewards, b.ActionLogp, b.VfPreds = f(n), f(n), f(n)
	for k := range 2 {
		b.StateIn[k], b.StateOut[k] = f(3*n), f(3*n)
	}
	for i := range n {
		b.Actions = append(b.Actions, float32(rng.IntN(2)))
		b.Terminateds = append(b.Terminateds, i%7 == 6)
		b.Truncateds = append(b.Truncateds, i%11 == 10)
		b.EpsID = append(b.EpsID, int64(i/7))
		b.EnvID = append(b.EnvID, int32(i%3))
		b.AgentIndex = append(b.AgentIndex, int32(i%2))
		b.AgentID = append(b.AgentID, []string{"left", "right_ü"}[i%2])
		b.T = append(b.T, int32(i%7))
	}
	for left := n; left > 0; left -= 5 {
		b.SeqLens = append(b.SeqLens, int32(min(5, left)))
	}
	return b
}

func multi(bs map[string]*envrunner.SampleBatch) *envrunner.MultiAgentBatch {
	m := &envrunner.MultiAgentBatch{PolicyBatches: bs}
	for _, b := range bs {
		m.AgentSteps += b.Count
	}
	m.EnvSteps = m.AgentSteps - 1
	return m
}

// TestBuildToBatch: a record holds every column and reads back to the same batches, for one
// policy (the batch's own memory) and for several (gathered).
func TestBuildToBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, m := range []*envrunner.MultiAgentBatch{
		multi(map[string]*envrunner.SampleBatch{envrunner.DefaultPolicyID: lstmBatch(rng, 23)}),
		multi(map[string]*envrunner.SampleBatch{"b": lstmBatch(rng, 12), "a": lstmBatch(rng, 9)}),
	} {
		var bd Builder
		rec, ok, err := bd.Build(m, map[string]string{"k": "v"})
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, int64(m.AgentSteps), rec.NumRows())
		assert.Equal(t, "v", func() string { v, _ := rec.Schema().Metadata().GetValue("k"); return v }())
		back, err := ToBatch(rec, m.EnvSteps)
		require.NoError(t, err)
		requireSame(t, m, back)
		rec.Release()
	}
}

// TestInfosColumn: the infos column holds each row's info as a JSON object and null for a
// row without one, and reads back; a record of batches without infos has a column of nulls,
// and the same Builder builds both in turn.
func TestInfosColumn(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	with := lstmBatch(rng, 6)
	with.Infos = make([]env.Info, 6)
	with.Infos[1] = env.Info{"a": int64(1), "s": "x"}
	with.Infos[4] = env.Info{"nested": map[string]any{"f": 0.5, "l": []any{true, nil}}}
	var bd Builder
	for i, m := range []*envrunner.MultiAgentBatch{
		multi(map[string]*envrunner.SampleBatch{"a": with, "b": lstmBatch(rng, 3)}),
		multi(map[string]*envrunner.SampleBatch{"a": lstmBatch(rng, 5)}),
		multi(map[string]*envrunner.SampleBatch{"a": with}),
	} {
		rec, ok, err := bd.Build(m, nil)
		require.NoError(t, err)
		require.True(t, ok)
		col := rec.Column(rec.Schema().FieldIndices(ColInfos)[0]).(*array.String)
		if i == 1 {
			assert.Equal(t, 5, col.NullN(), "no infos: every row null")
		} else {
			assert.Equal(t, int(rec.NumRows())-2, col.NullN())
			assert.Equal(t, `{"a":1,"s":"x"}`, col.Value(1))
			assert.Equal(t, `{"nested":{"f":0.5,"l":[true,null]}}`, col.Value(4))
		}
		back, err := ToBatch(rec, m.EnvSteps)
		require.NoError(t, err, "record %d", i)
		requireSame(t, m, back)
		rec.Release()
	}
}

// TestBuilderModuleIDsFollowPolicies: one Builder over batches whose policies or rows change
// (the module_id column is kept from the last batch only when they did not) reads every batch
// back right.
func TestBuilderModuleIDsFollowPolicies(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var bd Builder
	for i, m := range []*envrunner.MultiAgentBatch{
		multi(map[string]*envrunner.SampleBatch{"a": lstmBatch(rng, 10)}),
		multi(map[string]*envrunner.SampleBatch{"a": lstmBatch(rng, 10)}),
		multi(map[string]*envrunner.SampleBatch{"b": lstmBatch(rng, 10)}),
		multi(map[string]*envrunner.SampleBatch{"b": lstmBatch(rng, 11)}),
		multi(map[string]*envrunner.SampleBatch{"a": lstmBatch(rng, 4), "b": lstmBatch(rng, 7)}),
		multi(map[string]*envrunner.SampleBatch{"a": lstmBatch(rng, 7), "b": lstmBatch(rng, 4)}),
		multi(map[string]*envrunner.SampleBatch{"a": lstmBatch(rng, 7), "b": lstmBatch(rng, 4)}),
		multi(map[string]*envrunner.SampleBatch{"aa": lstmBatch(rng, 11)}),
	} {
		rec, ok, err := bd.Build(m, nil)
		require.NoError(t, err)
		require.True(t, ok)
		back, err := ToBatch(rec, m.EnvSteps)
		require.NoError(t, err, "batch %d", i)
		requireSame(t, m, back)
		rec.Release()
	}
}

func requireSame(t *testing.T, want, got *envrunner.MultiAgentBatch) {
	t.Helper()
	require.Equal(t, want.EnvSteps, got.EnvSteps)
	require.Equal(t, want.PolicyIDs(), got.PolicyIDs())
	for _, id := range want.PolicyIDs() {
		w, g := *want.PolicyBatches[id], *got.PolicyBatches[id]
		w.ActionSpace, g.ActionSpace = nil, nil // a stand-in comes back
		require.Equal(t, w, g, "policy %s", id)
	}
}

// TestIPC: records travel as Arrow IPC streams (the form the scale-out sends) and read back.
func TestIPC(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := multi(map[string]*envrunner.SampleBatch{"p": lstmBatch(rng, 40)})
	var bd Builder
	rec, _, err := bd.Build(m, nil)
	require.NoError(t, err)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
	rec.Release()
	r, err := ipc.NewReader(&buf)
	require.NoError(t, err)
	defer r.Release()
	require.True(t, r.Next())
	back, err := ToBatch(r.RecordBatch(), m.EnvSteps)
	require.NoError(t, err)
	requireSame(t, m, back)
}

// TestBuildAllocs: building a record allocates about the same handful of objects for 100 rows
// as for 10000 (none per row) once the Builder's buffers have grown.
func TestBuildAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	allocs := map[int]float64{}
	for _, n := range []int{100, 10000} {
		m := multi(map[string]*envrunner.SampleBatch{"a": lstmBatch(rng, n), "b": lstmBatch(rng, n)})
		var bd Builder
		allocs[n] = testing.AllocsPerRun(20, func() {
			rec, _, err := bd.Build(m, nil)
			if err != nil {
				panic(err)
			}
			rec.Release()
		})
	}
	// A few more with -race (its bookkeeping allocates); one per row would be thousands.
	assert.LessOrEqual(t, allocs[10000], allocs[100]+10, "allocations per record by rows: %v", allocs)
	assert.Less(t, allocs[10000], 200.0)
}

// TestLayoutMismatch: policies with other columns cannot share a record.
func TestLayoutMismatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	b := lstmBatch(rng, 5)
	b.VfPreds = nil
	var bd Builder
	_, _, err := bd.Build(multi(map[string]*envrunner.SampleBatch{"a": lstmBatch(rng, 5), "b": b}), nil)
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), `"a"`) && strings.Contains(err.Error(), `"b"`), err)
	_, ok, err := bd.Build(&envrunner.MultiAgentBatch{}, nil)
	assert.False(t, ok)
	assert.NoError(t, err)
}

// TestSchema: the column types of each action space.
func TestSchema(t *testing.T) {
	for _, tc := range []struct {
		l    Layout
		want string
	}{
		{Layout{ObsWidth: 4, ActionWidth: 1, Actions: IntActions}, "int64"},
		{Layout{ObsWidth: 4, ActionWidth: 3, Actions: IntVectorActions}, "fixed_size_list<item: int64, nullable>[3]"},
		{Layout{ObsWidth: 4, ActionWidth: 2}, "fixed_size_list<item: float32, nullable>[2]"},
	} {
		s := Schema(tc.l, nil)
		f := s.Field(s.FieldIndices(ColActions)[0])
		assert.Equal(t, strings.ReplaceAll(tc.want, ", nullable", ""), strings.ReplaceAll(fmt.Sprint(f.Type), ", nullable", ""))
		assert.Equal(t, arrow.FIXED_SIZE_LIST, s.Field(0).Type.ID())
	}
}

// TestOlderRecordWithIntegerAgentID: records written before agent_id held the agent's id
// had no agent_index and the index in an integer agent_id; they read back with the index and
// no ids.
func TestOlderRecordWithIntegerAgentID(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := multi(map[string]*envrunner.SampleBatch{"p": lstmBatch(rng, 17)})
	var bd Builder
	rec, _, err := bd.Build(m, nil)
	require.NoError(t, err)
	defer rec.Release()
	sc := rec.Schema()
	idx := sc.FieldIndices(ColAgentIndex)[0]
	var fields []arrow.Field
	var cols []arrow.Array
	for i, f := range sc.Fields() {
		switch f.Name {
		case ColAgentIndex:
			continue
		case ColAgentID:
			f.Type = arrow.PrimitiveTypes.Int32
			cols = append(cols, rec.Column(idx))
		default:
			cols = append(cols, rec.Column(i))
		}
		fields = append(fields, f)
	}
	old := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	defer old.Release()
	back, err := ToBatch(old, m.EnvSteps)
	require.NoError(t, err)
	want := *m.PolicyBatches["p"]
	want.AgentID = nil
	got := *back.PolicyBatches["p"]
	want.ActionSpace, got.ActionSpace = nil, nil
	require.Equal(t, want, got)
}
