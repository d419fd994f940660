package output

import (
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/arrowbatch"
	"github.com/onnxrl/sampler/internal/infojson"
)

// columnWriter writes the columns of a row group, in the order of arrowbatch.Schema, from the
// batches' own slices: no Arrow record in between. Vector columns are Parquet lists (what
// pqarrow makes of a fixed-size list) whose repetition and definition levels are the same
// for every row of a width, so they are built once and reused; the other buffers (integer
// actions, module ids, seq_lens) are reused from one row group to the next.
type columnWriter struct {
	levels  map[int]*listLevels // by width
	ints    []int64
	int32s  []int32
	modules []parquet.ByteArray
	agents  []parquet.ByteArray
	// The infos column: definition levels (0: null), reused; nullDefs stays all zeros.
	infoDefs, nullDefs []int16
	infoVals           []parquet.ByteArray
	infoData           []byte
}

// listLevels are the levels of rows of one width w of a required list of required values
// (max definition level 1, max repetition level 1): every value defined (1), the first of a
// row starting it (repetition 0) and the others continuing it (1). Width 0 (empty lists) has
// one level per row, definition 0 (no value) and repetition 0.
type listLevels struct {
	def, rep []int16
}

// forRows returns the levels of n rows of width w, growing them when needed.
func (c *columnWriter) forRows(w, n int) (def, rep []int16) {
	if c.levels == nil {
		c.levels = map[int]*listLevels{}
	}
	lv := c.levels[w]
	if lv == nil {
		lv = &listLevels{}
		c.levels[w] = lv
	}
	k := n * w
	if w == 0 {
		k = n
	}
	if len(lv.def) < k {
		size := max(k, 2*len(lv.def))
		lv.def, lv.rep = make([]int16, size), make([]int16, size)
		for i := range lv.def {
			if w > 0 {
				lv.def[i] = 1
				if i%w != 0 {
					lv.rep[i] = 1
				}
			}
		}
	}
	return lv.def[:k], lv.rep[:k]
}

// next returns the next column writer of the row group as a T, checking its levels: (1, 1)
// for a list, (0, 0) for a plain column.
func next[T file.ColumnChunkWriter](rgw file.SerialRowGroupWriter, list bool) (T, error) {
	var zero T
	cw, err := rgw.NextColumn()
	if err != nil {
		return zero, err
	}
	d := cw.Descr()
	want := int16(0)
	if list {
		want = 1
	}
	if d.MaxDefinitionLevel() != want || d.MaxRepetitionLevel() != want {
		return zero, fmt.Errorf("column %s has levels (%d, %d), want (%d, %d)", d.Path(),
			d.MaxDefinitionLevel(), d.MaxRepetitionLevel(), want, want)
	}
	t, ok := cw.(T)
	if !ok {
		return zero, fmt.Errorf("column %s has physical type %s, want %T", d.Path(), d.PhysicalType(), zero)
	}
	return t, nil
}

// floatRows writes a column of rows of w float32 values (a plain float32 column when scalar).
func (c *columnWriter) floatRows(rgw file.SerialRowGroupWriter, batches []*envrunner.SampleBatch, w int, scalar bool, get func(*envrunner.SampleBatch) []float32) error {
	cw, err := next[*file.Float32ColumnChunkWriter](rgw, !scalar)
	if err != nil {
		return err
	}
	for _, b := range batches {
		var def, rep []int16
		if !scalar {
			def, rep = c.forRows(w, b.Count)
		}
		if _, err := cw.WriteBatch(get(b)[:b.Count*w], def, rep); err != nil {
			return err
		}
	}
	return nil
}

func (c *columnWriter) int32Col(rgw file.SerialRowGroupWriter, batches []*envrunner.SampleBatch, get func(*envrunner.SampleBatch) []int32) error {
	cw, err := next[*file.Int32ColumnChunkWriter](rgw, false)
	if err != nil {
		return err
	}
	for _, b := range batches {
		if _, err := cw.WriteBatch(get(b)[:b.Count], nil, nil); err != nil {
			return err
		}
	}
	return nil
}

func (c *columnWriter) boolCol(rgw file.SerialRowGroupWriter, batches []*envrunner.SampleBatch, get func(*envrunner.SampleBatch) []bool) error {
	cw, err := next[*file.BooleanColumnChunkWriter](rgw, false)
	if err != nil {
		return err
	}
	for _, b := range batches {
		if _, err := cw.WriteBatch(get(b)[:b.Count], nil, nil); err != nil {
			return err
		}
	}
	return nil
}

// actions writes the actions column: rows of float32, or integers (one per row, or rows of
// them) converted as arrowbatch does.
func (c *columnWriter) actions(rgw file.SerialRowGroupWriter, l arrowbatch.Layout, batches []*envrunner.SampleBatch) error {
	if l.Actions == arrowbatch.RealActions {
		return c.floatRows(rgw, batches, l.ActionWidth, false, func(b *envrunner.SampleBatch) []float32 { return b.Actions })
	}
	list := l.Actions == arrowbatch.IntVectorActions
	cw, err := next[*file.Int64ColumnChunkWriter](rgw, list)
	if err != nil {
		return err
	}
	for _, b := range batches {
		c.ints = c.ints[:0]
		for _, v := range b.Actions[:b.Count*l.ActionWidth] {
			c.ints = append(c.ints, arrowbatch.IntAction(v))
		}
		var def, rep []int16
		if list {
			def, rep = c.forRows(l.ActionWidth, b.Count)
		}
		if _, err := cw.WriteBatch(c.ints, def, rep); err != nil {
			return err
		}
	}
	return nil
}

// infos writes the infos column, an optional string per row: each row's info as a JSON
// object, null for a row without one. A batch without infos is its rows' definition levels
// of 0 from a buffer of zeros kept from one row group to the next (Parquet encodes the run
// in a few bytes): nothing per row.
func (c *columnWriter) infos(rgw file.SerialRowGroupWriter, batches []*envrunner.SampleBatch) error {
	cw, err := rgw.NextColumn()
	if err != nil {
		return err
	}
	d := cw.Descr()
	if d.MaxDefinitionLevel() != 1 || d.MaxRepetitionLevel() != 0 {
		return fmt.Errorf("column %s has levels (%d, %d), want (1, 0)", d.Path(), d.MaxDefinitionLevel(), d.MaxRepetitionLevel())
	}
	bw, ok := cw.(*file.ByteArrayColumnChunkWriter)
	if !ok {
		return fmt.Errorf("column %s has physical type %s, want a byte array", d.Path(), d.PhysicalType())
	}
	for _, b := range batches {
		if len(b.Infos) == 0 {
			if len(c.nullDefs) < b.Count {
				c.nullDefs = make([]int16, b.Count)
			}
			if _, err := bw.WriteBatch(nil, c.nullDefs[:b.Count], nil); err != nil {
				return err
			}
			continue
		}
		c.infoDefs, c.infoVals, c.infoData = c.infoDefs[:0], c.infoVals[:0], c.infoData[:0]
		var ends []int
		for _, info := range b.Infos[:b.Count] {
			if info == nil {
				c.infoDefs = append(c.infoDefs, 0)
				continue
			}
			c.infoDefs = append(c.infoDefs, 1)
			c.infoData = infojson.Append(c.infoData, info)
			ends = append(ends, len(c.infoData))
		}
		start := 0
		for _, e := range ends { // slices of the final buffer (appending may have moved it)
			c.infoVals = append(c.infoVals, c.infoData[start:e])
			start = e
		}
		if _, err := bw.WriteBatch(c.infoVals, c.infoDefs, nil); err != nil {
			return err
		}
	}
	clear(c.infoVals)
	return nil
}

// writeRowGroup writes the rows of batches (policies ids, in that order) as the columns of
// rgw; they must have layout l, which is the file's.
func (c *columnWriter) writeRowGroup(rgw file.SerialRowGroupWriter, l arrowbatch.Layout, ids []string, batches []*envrunner.SampleBatch) error {
	type sb = envrunner.SampleBatch
	if err := c.floatRows(rgw, batches, l.ObsWidth, false, func(b *sb) []float32 { return b.Obs }); err != nil {
		return err
	}
	if err := c.floatRows(rgw, batches, l.ObsWidth, false, func(b *sb) []float32 { return b.NewObs }); err != nil {
		return err
	}
	if err := c.actions(rgw, l, batches); err != nil {
		return err
	}
	if err := c.floatRows(rgw, batches, 1, true, func(b *sb) []float32 { return b.Rewards }); err != nil {
		return err
	}
	if err := c.boolCol(rgw, batches, func(b *sb) []bool { return b.Terminateds }); err != nil {
		return err
	}
	if err := c.boolCol(rgw, batches, func(b *sb) []bool { return b.Truncateds }); err != nil {
		return err
	}
	eps, err := next[*file.Int64ColumnChunkWriter](rgw, false)
	if err != nil {
		return err
	}
	for _, b := range batches {
		if _, err := eps.WriteBatch(b.EpsID[:b.Count], nil, nil); err != nil {
			return err
		}
	}
	if err := c.int32Col(rgw, batches, func(b *sb) []int32 { return b.EnvID }); err != nil {
		return err
	}
	agents, err := next[*file.ByteArrayColumnChunkWriter](rgw, false)
	if err != nil {
		return err
	}
	for _, b := range batches {
		c.agents = c.agents[:0]
		for i := range b.Count {
			var id parquet.ByteArray
			if len(b.AgentID) > 0 {
				// The writer only reads the bytes: the string's own, no copy per row.
				id = unsafe.Slice(unsafe.StringData(b.AgentID[i]), len(b.AgentID[i]))
			}
			c.agents = append(c.agents, id)
		}
		if _, err := agents.WriteBatch(c.agents, nil, nil); err != nil {
			return err
		}
	}
	clear(c.agents) // no reference to the batches' strings once written
	if err := c.int32Col(rgw, batches, func(b *sb) []int32 { return b.AgentIndex }); err != nil {
		return err
	}
	mods, err := next[*file.ByteArrayColumnChunkWriter](rgw, false)
	if err != nil {
		return err
	}
	for i, b := range batches {
		id := parquet.ByteArray(ids[i])
		c.modules = c.modules[:0]
		for range b.Count {
			c.modules = append(c.modules, id)
		}
		if _, err := mods.WriteBatch(c.modules, nil, nil); err != nil {
			return err
		}
	}
	if err := c.int32Col(rgw, batches, func(b *sb) []int32 { return b.T }); err != nil {
		return err
	}
	if err := c.infos(rgw, batches); err != nil {
		return err
	}
	if l.DistWidth > 0 {
		if err := c.floatRows(rgw, batches, l.DistWidth, false, func(b *sb) []float32 { return b.ActionDistInputs }); err != nil {
			return err
		}
	}
	if l.ActionLogp {
		if err := c.floatRows(rgw, batches, 1, true, func(b *sb) []float32 { return b.ActionLogp }); err != nil {
			return err
		}
	}
	if l.VfPreds {
		if err := c.floatRows(rgw, batches, 1, true, func(b *sb) []float32 { return b.VfPreds }); err != nil {
			return err
		}
	}
	for k, w := range l.StateWidths {
		if err := c.floatRows(rgw, batches, w, false, func(b *sb) []float32 { return b.StateIn[k] }); err != nil {
			return err
		}
	}
	for k, w := range l.StateWidths {
		if err := c.floatRows(rgw, batches, w, false, func(b *sb) []float32 { return b.StateOut[k] }); err != nil {
			return err
		}
	}
	if len(l.StateWidths) > 0 {
		if err := c.int32Col(rgw, batches, func(b *sb) []int32 {
			c.int32s = arrowbatch.AppendSeqLensPerRow(c.int32s[:0], b)
			return c.int32s
		}); err != nil {
			return err
		}
	}
	if l.Advantages {
		if err := c.floatRows(rgw, batches, 1, true, func(b *sb) []float32 { return b.Advantages }); err != nil {
			return err
		}
	}
	if l.ValueTargets {
		if err := c.floatRows(rgw, batches, 1, true, func(b *sb) []float32 { return b.ValueTargets }); err != nil {
			return err
		}
	}
	return nil
}
