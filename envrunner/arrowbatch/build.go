package arrowbatch

import (
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/internal/infojson"
)

// Builder builds records from MultiAgentBatches, reusing its buffers from one record to the
// next: in steady state a record costs a few dozen small allocations (the Arrow array
// headers), none per row. The zero value is ready to use; a Builder is not safe for
// concurrent use.
//
// A record from Build shares memory with the batch it was built from (the float32 and integer
// columns of a single-policy batch are not copied) and with the Builder: it is valid until the
// batch is modified or the next Build, whichever comes first. Copy it (Arrow IPC, a Parquet
// file) before that.
type Builder struct {
	ids    []string
	schema *arrow.Schema
	layout Layout
	meta   map[string]string

	// Reused buffers, one per column that may need converting or gathering.
	gathered  [][]byte
	next      int
	bits      [2][]byte
	modOff    []int32
	modData   []byte
	modRuns   []modRun // the policies and rows modOff and modData hold
	agentOff  []int32
	agentData []byte
	seqLens   []int32
	actInts   []int64
	zeros     []int32 // the offsets of empty lists (and of an infos column of nulls)
	nulls     []byte  // a validity bitmap of nulls, never written to
	infoOff   []int32
	infoData  []byte
	infoBits  []byte
	cols      []arrow.Array
}

// Build returns the record of m's rows (see the package doc for the columns), with meta as
// the schema's key-value metadata. It returns false when m has no rows. Policies of
// different layouts are an error; so are columns that do not match a batch's Count and widths.
func (bd *Builder) Build(m *envrunner.MultiAgentBatch, meta map[string]string) (arrow.RecordBatch, bool, error) {
	l, ok, err := LayoutOf(m)
	if err != nil || !ok {
		return nil, false, err
	}
	bd.ids = policyIDs(m, bd.ids[:0])
	batches := make([]*envrunner.SampleBatch, 0, 4)
	n := 0
	for _, id := range bd.ids {
		b := m.PolicyBatches[id]
		if err := b.Validate(); err != nil {
			return nil, false, fmt.Errorf("arrowbatch: policy %q: %w", id, err)
		}
		batches = append(batches, b)
		n += b.Count
	}
	if bd.schema == nil || !bd.layout.Equal(l) || !sameMeta(bd.meta, meta) {
		bd.layout = l
		bd.layout.StateWidths = append([]int(nil), l.StateWidths...)
		bd.meta = meta
		bd.schema = Schema(bd.layout, meta)
	}
	bd.next = 0
	for _, c := range bd.cols {
		c.Release()
	}
	bd.cols = bd.cols[:0]

	f32 := func(get func(b *envrunner.SampleBatch) []float32) []byte {
		return bd.gather(batches, func(b *envrunner.SampleBatch) []byte { return arrow.Float32Traits.CastToBytes(get(b)) })
	}
	i32 := func(get func(b *envrunner.SampleBatch) []int32) []byte {
		return bd.gather(batches, func(b *envrunner.SampleBatch) []byte { return arrow.Int32Traits.CastToBytes(get(b)) })
	}
	fields := bd.schema.Fields()
	add := func(data []byte) {
		t := fields[len(bd.cols)].Type
		bd.cols = append(bd.cols, bd.newArray(t, n, data))
	}

	add(f32(func(b *envrunner.SampleBatch) []float32 { return b.Obs }))
	add(f32(func(b *envrunner.SampleBatch) []float32 { return b.NewObs }))
	if l.Actions == RealActions {
		add(f32(func(b *envrunner.SampleBatch) []float32 { return b.Actions }))
	} else {
		bd.actInts = bd.actInts[:0]
		for _, b := range batches {
			for _, v := range b.Actions {
				bd.actInts = append(bd.actInts, IntAction(v))
			}
		}
		add(arrow.Int64Traits.CastToBytes(bd.actInts))
	}
	add(f32(func(b *envrunner.SampleBatch) []float32 { return b.Rewards }))
	add(bd.packBits(0, batches, func(b *envrunner.SampleBatch) []bool { return b.Terminateds }))
	add(bd.packBits(1, batches, func(b *envrunner.SampleBatch) []bool { return b.Truncateds }))
	add(bd.gather(batches, func(b *envrunner.SampleBatch) []byte { return arrow.Int64Traits.CastToBytes(b.EpsID) }))
	add(i32(func(b *envrunner.SampleBatch) []int32 { return b.EnvID }))
	bd.cols = append(bd.cols, bd.agentIDs(batches, n))
	add(i32(func(b *envrunner.SampleBatch) []int32 { return b.AgentIndex }))
	bd.cols = append(bd.cols, bd.moduleIDs(batches, n))
	add(i32(func(b *envrunner.SampleBatch) []int32 { return b.T }))
	bd.cols = append(bd.cols, bd.infos(batches, n))
	if l.DistWidth > 0 {
		add(f32(func(b *envrunner.SampleBatch) []float32 { return b.ActionDistInputs }))
	}
	if l.ActionLogp {
		add(f32(func(b *envrunner.SampleBatch) []float32 { return b.ActionLogp }))
	}
	if l.VfPreds {
		add(f32(func(b *envrunner.SampleBatch) []float32 { return b.VfPreds }))
	}
	for k := range l.StateWidths {
		add(f32(func(b *envrunner.SampleBatch) []float32 { return b.StateIn[k] }))
	}
	for k := range l.StateWidths {
		add(f32(func(b *envrunner.SampleBatch) []float32 { return b.StateOut[k] }))
	}
	if len(l.StateWidths) > 0 {
		add(arrow.Int32Traits.CastToBytes(bd.seqLensPerRow(batches, n)))
	}
	if l.Advantages {
		add(f32(func(b *envrunner.SampleBatch) []float32 { return b.Advantages }))
	}
	if l.ValueTargets {
		add(f32(func(b *envrunner.SampleBatch) []float32 { return b.ValueTargets }))
	}
	return array.NewRecordBatch(bd.schema, bd.cols, int64(n)), true, nil
}

func sameMeta(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// IntAction converts an action of an integer space; a value that is not an integer cannot
// come from a valid action and is truncated (NaN gives 0).
func IntAction(v float32) int64 {
	f := float64(v)
	switch {
	case f != f:
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// gather returns the bytes of one column: the batch's own memory for a single policy, the
// policies' columns one after the other in a reused buffer otherwise.
func (bd *Builder) gather(batches []*envrunner.SampleBatch, get func(b *envrunner.SampleBatch) []byte) []byte {
	if len(batches) == 1 {
		return get(batches[0])
	}
	if bd.next == len(bd.gathered) {
		bd.gathered = append(bd.gathered, nil)
	}
	buf := bd.gathered[bd.next][:0]
	for _, b := range batches {
		buf = append(buf, get(b)...)
	}
	bd.gathered[bd.next] = buf
	bd.next++
	return buf
}

// packBits packs a bool column into an Arrow bitmap (buffer i of the Builder).
func (bd *Builder) packBits(i int, batches []*envrunner.SampleBatch, get func(b *envrunner.SampleBatch) []bool) []byte {
	n := 0
	for _, b := range batches {
		n += b.Count
	}
	buf := bd.bits[i][:0]
	buf = append(buf, make([]byte, (n+7)/8)...)
	r := 0
	for _, b := range batches {
		for _, v := range get(b)[:b.Count] {
			if v {
				buf[r>>3] |= 1 << (r & 7)
			}
			r++
		}
	}
	bd.bits[i] = buf
	return buf
}

// modRun is a policy's rows in a batch.
type modRun struct {
	id   string
	rows int
}

// moduleIDs builds the module_id column: each row the id of its policy. The column of the
// last batch is used again when its policies had the same rows, as a runner's batches of one
// policy and a fixed fragment have (sample run --publish spent 2% of its CPU here).
func (bd *Builder) moduleIDs(batches []*envrunner.SampleBatch, n int) arrow.Array {
	same := len(bd.modRuns) == len(batches) && len(bd.modOff) == n+1
	for i, b := range batches {
		same = same && bd.modRuns[i] == modRun{bd.ids[i], b.Count}
	}
	if !same {
		bd.modRuns = bd.modRuns[:0]
		bd.modOff = append(bd.modOff[:0], 0)
		bd.modData = bd.modData[:0]
		for i, b := range batches {
			id := bd.ids[i]
			bd.modRuns = append(bd.modRuns, modRun{id, b.Count})
			for range b.Count {
				bd.modData = append(bd.modData, id...)
				bd.modOff = append(bd.modOff, int32(len(bd.modData)))
			}
		}
	}
	return stringArray(n, bd.modOff, bd.modData)
}

// agentIDs builds the agent_id column: each row its agent's id ("" for a batch that has
// none, read from an older file).
func (bd *Builder) agentIDs(batches []*envrunner.SampleBatch, n int) arrow.Array {
	bd.agentOff = append(bd.agentOff[:0], 0)
	bd.agentData = bd.agentData[:0]
	for _, b := range batches {
		for i := range b.Count {
			if len(b.AgentID) > 0 {
				bd.agentData = append(bd.agentData, b.AgentID[i]...)
			}
			bd.agentOff = append(bd.agentOff, int32(len(bd.agentData)))
		}
	}
	return stringArray(n, bd.agentOff, bd.agentData)
}

// infos builds the infos column: each row's info as a JSON object (infojson), null for a row
// without one. Batches without infos (most) give a column of nulls over buffers of zeros kept
// from one record to the next: nothing is written per row.
func (bd *Builder) infos(batches []*envrunner.SampleBatch, n int) arrow.Array {
	has := false
	for _, b := range batches {
		has = has || len(b.Infos) > 0
	}
	bitmap := (n + 7) / 8
	if !has {
		if len(bd.zeros) < n+1 {
			bd.zeros = make([]int32, n+1)
		}
		if len(bd.nulls) < bitmap {
			bd.nulls = make([]byte, bitmap)
		}
		return nullableStrings(n, n, bd.nulls[:bitmap], bd.zeros[:n+1], nil)
	}
	bd.infoOff = append(bd.infoOff[:0], 0)
	bd.infoData = bd.infoData[:0]
	bd.infoBits = append(bd.infoBits[:0], make([]byte, bitmap)...)
	r, nulls := 0, 0
	for _, b := range batches {
		for i := range b.Count {
			if len(b.Infos) > 0 && b.Infos[i] != nil {
				bd.infoData = infojson.Append(bd.infoData, b.Infos[i])
				bd.infoBits[r>>3] |= 1 << (r & 7)
			} else {
				nulls++
			}
			bd.infoOff = append(bd.infoOff, int32(len(bd.infoData)))
			r++
		}
	}
	return nullableStrings(n, nulls, bd.infoBits, bd.infoOff, bd.infoData)
}

// nullableStrings is a string array of n values, nulls of them null (validity bitmap bits),
// over off and data, without a copy.
func nullableStrings(n, nulls int, bits []byte, off []int32, data []byte) arrow.Array {
	d := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{memory.NewBufferBytes(bits),
		memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(off)), memory.NewBufferBytes(data)}, nil, nulls, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

// stringArray is a string array of n values over off (n+1 offsets) and data, without a
// copy.
func stringArray(n int, off []int32, data []byte) arrow.Array {
	d := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{nil,
		memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(off)), memory.NewBufferBytes(data)}, nil, 0, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

// seqLensPerRow spreads the batches' seq_lens over the rows (see AppendSeqLensPerRow).
func (bd *Builder) seqLensPerRow(batches []*envrunner.SampleBatch, n int) []int32 {
	buf := bd.seqLens[:0]
	for _, b := range batches {
		buf = AppendSeqLensPerRow(buf, b)
	}
	bd.seqLens = buf
	return buf
}

// AppendSeqLensPerRow appends b.Count values to dst, the seq_lens column of b's rows: the
// length of each sequence on its first row, 0 on the other rows. Lengths that run past
// b.Count are cut there.
func AppendSeqLensPerRow(dst []int32, b *envrunner.SampleBatch) []int32 {
	start := len(dst)
	dst = slices.Grow(dst, b.Count)[:start+b.Count]
	clear(dst[start:])
	r := 0
	for _, l := range b.SeqLens {
		if r >= 0 && r < b.Count {
			dst[start+r] = l
		}
		r += int(l)
	}
	return dst
}

// newArray wraps data as an array of type t and n rows: a primitive column, a fixed-size
// list whose child holds the values, or a list of n empty rows (width 0).
func (bd *Builder) newArray(t arrow.DataType, n int, data []byte) arrow.Array {
	var d *array.Data
	if l, ok := t.(*arrow.ListType); ok {
		if len(bd.zeros) < n+1 {
			bd.zeros = make([]int32, n+1)
		}
		child := array.NewData(l.Elem(), 0, []*memory.Buffer{nil, memory.NewBufferBytes(nil)}, nil, 0, 0)
		d = array.NewData(t, n, []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(bd.zeros[:n+1]))}, []arrow.ArrayData{child}, 0, 0)
		child.Release()
	} else if fl, ok := t.(*arrow.FixedSizeListType); ok {
		child := array.NewData(fl.Elem(), n*int(fl.Len()), []*memory.Buffer{nil, memory.NewBufferBytes(data)}, nil, 0, 0)
		d = array.NewData(t, n, []*memory.Buffer{nil}, []arrow.ArrayData{child}, 0, 0)
		child.Release()
	} else {
		d = array.NewData(t, n, []*memory.Buffer{nil, memory.NewBufferBytes(data)}, nil, 0, 0)
	}
	defer d.Release()
	return array.MakeFromData(d)
}
