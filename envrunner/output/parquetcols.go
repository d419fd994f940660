package output

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"unsafe"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/arrowbatch"
	"github.com/onnxrl/sampler/internal/infojson"
)

// columnWriter writes the column chunks of a row group, in the order of arrowbatch.Schema,
// from the batches' own slices (see parquetpage.go for the pages):
//
//   - float, int32 and int64 columns are PLAIN: the pages' values are the batches' memory
//     itself, handed to the codec without a copy (on a little-endian machine);
//   - vector columns are Parquet lists (what pqarrow makes of a fixed-size list) whose levels
//     are the same for every row of a width (listLevels); they have no statistics, as minima
//     and maxima of the values inside rows select nothing a reader would filter on;
//   - agent_id and module_id are dictionary-encoded (RLE_DICTIONARY): a batch has one module
//     and few agents, so the values are a dictionary page of a few strings and runs of
//     indices instead of a string per row;
//   - infos, the one optional column, has definition levels 0 (null) or 1 per row.
//
// Scalar columns have statistics (minimum, maximum, null count) as Arrow's writer gives them.
// Buffers are reused from one row group to the next.
type columnWriter struct {
	p        pageWriter
	pageSize int // dataPageSize, smaller in tests
	schema   *schema.Schema
	col      int // the next column of the row group
	lv       listLevels
	// The file's column chunks, row group after row group, and the bytes of their statistics.
	chunks []chunkInfo
	arena  []byte
	// Scratch.
	ints    []int64
	int32s  []int32
	idx     []uint32 // dictionary indices, infos' definition levels
	vals    []byte   // values not in a batch's memory as they are written
	lvb     []byte   // levels not from listLevels
	dict    map[string]uint32
	entries []string
}

// dataPageSize is the size of a page's values before compression: the larger, the fewer
// headers, codec calls and level runs. Writing 20.5M CartPole rows (BenchmarkWriter, Snappy,
// 400 row groups of 51,200 rows) took 0.71-0.78 s of user CPU with pages of 16 KiB,
// 0.65-0.71 s with 64 KiB and 0.66-0.67 s with 256 KiB.
const dataPageSize = 64 << 10

// maxStatSize bounds the minimum and maximum of a string column (Arrow's default): larger
// ones are left out rather than cut.
const maxStatSize = 4096

// pageRows is the rows of a page of rows of rowBytes bytes.
func (c *columnWriter) pageRows(rowBytes int) int { return max(1, c.pageSize/max(1, rowBytes)) }

// littleEndian: Parquet's PLAIN values are little-endian; on such a machine they are the
// batches' memory.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// plain returns the PLAIN bytes of v: its memory, or (big-endian) a little-endian copy in
// scratch.
func plain[T float32 | int32 | int64](v []T, scratch *[]byte) []byte {
	size := int(unsafe.Sizeof(T(0)))
	if littleEndian || len(v) == 0 {
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*size)
	}
	b := (*scratch)[:0]
	for _, x := range v {
		switch size {
		case 4:
			b = binary.LittleEndian.AppendUint32(b, *(*uint32)(unsafe.Pointer(&x)))
		default:
			b = binary.LittleEndian.AppendUint64(b, *(*uint64)(unsafe.Pointer(&x)))
		}
	}
	*scratch = b
	return b
}

// Maximum (definition, repetition) levels of the writer's columns.
const (
	levelsRequired = iota // a required value: (0, 0)
	levelsList            // a required list of required values: (1, 1)
	levelsOptional        // an optional value: (1, 0)
)

// next starts the row group's next column chunk, checking that the schema has it as the
// writer writes it: physical type typ, levels of kind (levelsRequired, levelsList or
// levelsOptional).
func (c *columnWriter) next(typ parquet.Type, kind int) error {
	if c.col >= c.schema.NumColumns() {
		return fmt.Errorf("the schema has %d columns, the writer writes more", c.schema.NumColumns())
	}
	d := c.schema.Column(c.col)
	c.col++
	def, rep := int16(0), int16(0)
	switch kind {
	case levelsList:
		def, rep = 1, 1
	case levelsOptional:
		def = 1
	}
	if d.MaxDefinitionLevel() != def || d.MaxRepetitionLevel() != rep {
		return fmt.Errorf("column %s has levels (%d, %d), want (%d, %d)", d.Path(),
			d.MaxDefinitionLevel(), d.MaxRepetitionLevel(), def, rep)
	}
	if d.PhysicalType() != typ {
		return fmt.Errorf("column %s has physical type %s, want %s", d.Path(), d.PhysicalType(), typ)
	}
	c.p.beginChunk(c.col - 1)
	return nil
}

// levelKind is levelsList for a vector column, levelsRequired for a scalar one.
func levelKind(scalar bool) int {
	if scalar {
		return levelsRequired
	}
	return levelsList
}

// endChunk records the chunk written since next.
func (c *columnWriter) endChunk() error {
	if c.p.err != nil {
		return c.p.err
	}
	c.chunks = append(c.chunks, c.p.chunk)
	return nil
}

// setStats sets the chunk's statistics: min and max (PLAIN bytes; none when nil) and the
// null count.
func (c *columnWriter) setStats(lo, hi []byte, nulls int64) {
	s := chunkStats{on: true, nulls: nulls}
	if lo != nil && hi != nil && len(lo) <= maxStatSize && len(hi) <= maxStatSize {
		s.minMax, s.at, s.minLen, s.maxLen = true, len(c.arena), len(lo), len(hi)
		c.arena = append(append(c.arena, lo...), hi...)
	}
	c.p.chunk.stats = s
}

// statBytes returns a chunk's min and max.
func (c *columnWriter) statBytes(s *chunkStats) (lo, hi []byte) {
	return c.arena[s.at : s.at+s.minLen], c.arena[s.at+s.minLen : s.at+s.minLen+s.maxLen]
}

// valuePages writes the data pages of a column of rows of w plain values of size bytes each
// (a scalar column when scalar, its levels omitted), calling span with each batch's values
// of a scalar column for its statistics.
func valuePages[T float32 | int32 | int64](c *columnWriter, batches []*envrunner.SampleBatch, w int, scalar bool, size int,
	get func(*envrunner.SampleBatch) []T, span func([]T)) {
	per := c.pageRows(size * w)
	for _, b := range batches {
		v := get(b)[:b.Count*w]
		for r := 0; r < b.Count; r += per {
			n := min(per, b.Count-r)
			vals := plain(v[r*w:(r+n)*w], &c.vals)
			if scalar {
				c.p.dataPage(nil, 0, vals, n, 0, n, encPlain)
				continue
			}
			lv, repLen := c.lv.levels(w, n)
			levels, nulls := n*w, 0
			if w == 0 {
				levels, nulls = n, n
			}
			c.p.dataPage(lv, repLen, vals, levels, nulls, n, encPlain)
		}
		if scalar {
			span(v)
		}
	}
}

// floatRows writes a column of rows of w float32 values (a plain float32 column when scalar,
// with statistics).
func (c *columnWriter) floatRows(batches []*envrunner.SampleBatch, w int, scalar bool, get func(*envrunner.SampleBatch) []float32) error {
	if err := c.next(parquet.Types.Float, levelKind(scalar)); err != nil {
		return err
	}
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	valuePages(c, batches, w, scalar, 4, get, func(v []float32) { lo, hi = floatRange(v, lo, hi) })
	if scalar {
		if lo > hi { // no value but NaN: no minimum or maximum
			c.setStats(nil, nil, 0)
			return c.endChunk()
		}
		// As Arrow's writer: a zero minimum is -0, a zero maximum +0.
		if lo == 0 {
			lo = float32(math.Copysign(0, -1))
		}
		if hi == 0 {
			hi = 0
		}
		var st [8]byte
		binary.LittleEndian.PutUint32(st[:], math.Float32bits(lo))
		binary.LittleEndian.PutUint32(st[4:], math.Float32bits(hi))
		c.setStats(st[:4], st[4:], 0)
	}
	return c.endChunk()
}

// floatRange widens [lo, hi] by v's values, NaN left out.
func floatRange(v []float32, lo, hi float32) (float32, float32) {
	for _, x := range v {
		if x < lo {
			lo = x
		}
		if x > hi {
			hi = x
		}
	}
	return lo, hi
}

// intRange widens [lo, hi] by v's values.
func intRange[T int32 | int64](v []T, lo, hi T) (T, T) {
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// int32Col writes a column of int32 values, with statistics.
func (c *columnWriter) int32Col(batches []*envrunner.SampleBatch, get func(*envrunner.SampleBatch) []int32) error {
	if err := c.next(parquet.Types.Int32, levelsRequired); err != nil {
		return err
	}
	lo, hi := int32(math.MaxInt32), int32(math.MinInt32)
	per := c.pageRows(4)
	for _, b := range batches {
		v := get(b)[:b.Count]
		for r := 0; r < len(v); r += per {
			n := min(per, len(v)-r)
			c.p.dataPage(nil, 0, plain(v[r:r+n], &c.vals), n, 0, n, encPlain)
		}
		lo, hi = intRange(v, lo, hi)
	}
	var st [8]byte
	binary.LittleEndian.PutUint32(st[:], uint32(lo))
	binary.LittleEndian.PutUint32(st[4:], uint32(hi))
	c.setStats(st[:4], st[4:], 0)
	return c.endChunk()
}

// int64Rows writes a column of rows of w int64 values (a plain column when scalar, with
// statistics) from get, which may convert into c.ints.
func (c *columnWriter) int64Rows(batches []*envrunner.SampleBatch, w int, scalar bool, get func(*envrunner.SampleBatch) []int64) error {
	if err := c.next(parquet.Types.Int64, levelKind(scalar)); err != nil {
		return err
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	valuePages(c, batches, w, scalar, 8, get, func(v []int64) { lo, hi = intRange(v, lo, hi) })
	if scalar {
		var st [16]byte
		binary.LittleEndian.PutUint64(st[:], uint64(lo))
		binary.LittleEndian.PutUint64(st[8:], uint64(hi))
		c.setStats(st[:8], st[8:], 0)
	}
	return c.endChunk()
}

// boolCol writes a column of booleans (PLAIN: bit-packed, LSB first), with statistics.
func (c *columnWriter) boolCol(batches []*envrunner.SampleBatch, get func(*envrunner.SampleBatch) []bool) error {
	if err := c.next(parquet.Types.Boolean, levelsRequired); err != nil {
		return err
	}
	trues, rows := 0, 0
	per := c.pageRows(1) * 8
	for _, b := range batches {
		v := get(b)[:b.Count]
		for r := 0; r < len(v); r += per {
			page := v[r:min(r+per, len(v))]
			c.vals = packBools(c.vals[:0], page)
			for _, x := range c.vals {
				trues += bits.OnesCount8(x)
			}
			c.p.dataPage(nil, 0, c.vals, len(page), 0, len(page), encPlain)
		}
		rows += len(v)
	}
	st := [2]byte{0, 1}
	if trues == rows {
		st[0] = 1
	}
	if trues == 0 {
		st[1] = 0
	}
	c.setStats(st[:1], st[1:], 0)
	return c.endChunk()
}

// packBools appends v bit-packed, LSB first, the last byte padded with zeros.
func packBools(dst []byte, v []bool) []byte {
	// A Go bool is a byte 0 or 1: eight of them as a little-endian word times this constant
	// have, in the top byte, bit k set to byte k.
	const gather = 0x0102040810204080
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v))
	i := 0
	for ; i+8 <= len(b); i += 8 {
		dst = append(dst, byte(binary.LittleEndian.Uint64(b[i:])*gather>>56))
	}
	if i < len(b) {
		var x byte
		for k, t := range b[i:] {
			x |= (t & 1) << k
		}
		dst = append(dst, x)
	}
	return dst
}

// dictCol writes a column of strings, the rows' indices in c.idx into the dictionary
// c.entries: a dictionary page, then data pages of RLE_DICTIONARY indices. Its statistics
// are the least and greatest entry.
func (c *columnWriter) dictCol() error {
	vals := c.vals[:0]
	lo, hi := c.entries[0], c.entries[0]
	for _, s := range c.entries {
		vals = binary.LittleEndian.AppendUint32(vals, uint32(len(s)))
		vals = append(vals, s...)
		lo, hi = min(lo, s), max(hi, s)
	}
	c.vals = vals
	c.p.dictPage(vals, len(c.entries))
	width := bitWidth(len(c.entries))
	per := c.pageRows(1) * 8
	for r := 0; r < len(c.idx); r += per {
		n := min(per, len(c.idx)-r)
		c.vals = appendHybrid(append(c.vals[:0], byte(width)), c.idx[r:r+n], width)
		c.p.dataPage(nil, 0, c.vals, n, 0, n, encRLEDictionary)
	}
	c.setStats(unsafe.Slice(unsafe.StringData(lo), len(lo)), unsafe.Slice(unsafe.StringData(hi), len(hi)), 0)
	// No reference to the batches' strings once written.
	clear(c.dict)
	clear(c.entries)
	c.entries = c.entries[:0]
	return c.endChunk()
}

// entry returns the index of s in the dictionary being built, adding it when new.
func (c *columnWriter) entry(s string) uint32 {
	if c.dict == nil {
		c.dict = map[string]uint32{}
	}
	k, ok := c.dict[s]
	if !ok {
		k = uint32(len(c.entries))
		c.dict[s] = k
		c.entries = append(c.entries, s)
	}
	return k
}

// agentIDs writes the agent_id column (the empty string for a batch without agent ids).
func (c *columnWriter) agentIDs(batches []*envrunner.SampleBatch) error {
	if err := c.next(parquet.Types.ByteArray, levelsRequired); err != nil {
		return err
	}
	c.idx = c.idx[:0]
	for _, b := range batches {
		if len(b.AgentID) == 0 {
			k := c.entry("")
			for range b.Count {
				c.idx = append(c.idx, k)
			}
			continue
		}
		last, k := b.AgentID[0], c.entry(b.AgentID[0])
		for _, s := range b.AgentID[:b.Count] {
			if s != last { // the same string most of the time: a pointer compared
				last, k = s, c.entry(s)
			}
			c.idx = append(c.idx, k)
		}
	}
	return c.dictCol()
}

// moduleIDs writes the module_id column: each batch's rows get its policy's id.
func (c *columnWriter) moduleIDs(ids []string, batches []*envrunner.SampleBatch) error {
	if err := c.next(parquet.Types.ByteArray, levelsRequired); err != nil {
		return err
	}
	c.idx = c.idx[:0]
	for i, b := range batches {
		k := c.entry(ids[i])
		for range b.Count {
			c.idx = append(c.idx, k)
		}
	}
	return c.dictCol()
}

// infos writes the infos column, an optional string per row: each row's info as a JSON
// object, null for a row without one. A batch without infos is a run of definition levels
// 0 (null), a few bytes whatever its rows.
func (c *columnWriter) infos(batches []*envrunner.SampleBatch) error {
	if err := c.next(parquet.Types.ByteArray, levelsOptional); err != nil {
		return err
	}
	var nulls int64
	for _, b := range batches {
		if len(b.Infos) == 0 {
			c.lvb = appendRLERun(c.lvb[:0], b.Count, 0, 1)
			c.p.dataPage(c.lvb, 0, nil, b.Count, b.Count, b.Count, encPlain)
			nulls += int64(b.Count)
			continue
		}
		infos := b.Infos[:b.Count]
		for r := 0; r < len(infos); {
			c.idx, c.vals = c.idx[:0], c.vals[:0]
			k := 0
			for ; r+k < len(infos) && len(c.vals) < c.pageSize; k++ {
				info := infos[r+k]
				if info == nil {
					c.idx = append(c.idx, 0)
					continue
				}
				c.idx = append(c.idx, 1)
				at := len(c.vals)
				c.vals = infojson.Append(append(c.vals, 0, 0, 0, 0), info)
				binary.LittleEndian.PutUint32(c.vals[at:], uint32(len(c.vals)-at-4))
			}
			n := 0
			for _, d := range c.idx {
				n += int(1 - d)
			}
			c.lvb = appendHybrid(c.lvb[:0], c.idx, 1)
			c.p.dataPage(c.lvb, 0, c.vals, k, n, k, encPlain)
			nulls += int64(n)
			r += k
		}
	}
	c.setStats(nil, nil, nulls)
	return c.endChunk()
}

// writeRowGroup writes the rows of batches (policies ids, in that order) as the column
// chunks of a row group; they must have layout l, which is the file's. The columns are
// written in the schema's order (arrowbatch's package doc), a group of them at a time.
func (c *columnWriter) writeRowGroup(l arrowbatch.Layout, ids []string, batches []*envrunner.SampleBatch) error {
	c.col = 0
	if err := c.transitionCols(l, batches); err != nil {
		return err
	}
	if err := c.rowIDCols(ids, batches); err != nil {
		return err
	}
	if err := c.policyCols(l, batches); err != nil {
		return err
	}
	if err := c.stateCols(l, batches); err != nil {
		return err
	}
	if err := c.postprocessedCols(l, batches); err != nil {
		return err
	}
	if c.col != c.schema.NumColumns() {
		return fmt.Errorf("the writer wrote %d columns of the schema's %d", c.col, c.schema.NumColumns())
	}
	return nil
}

// transitionCols writes the columns every row group starts with, the transition itself:
// obs, new_obs, actions, rewards, terminateds and truncateds.
func (c *columnWriter) transitionCols(l arrowbatch.Layout, batches []*envrunner.SampleBatch) error {
	type sb = envrunner.SampleBatch
	if err := c.floatRows(batches, l.ObsWidth, false, func(b *sb) []float32 { return b.Obs }); err != nil {
		return err
	}
	if err := c.floatRows(batches, l.ObsWidth, false, func(b *sb) []float32 { return b.NewObs }); err != nil {
		return err
	}
	if err := c.actionCol(l, batches); err != nil {
		return err
	}
	if err := c.floatRows(batches, 1, true, func(b *sb) []float32 { return b.Rewards }); err != nil {
		return err
	}
	if err := c.boolCol(batches, func(b *sb) []bool { return b.Terminateds }); err != nil {
		return err
	}
	return c.boolCol(batches, func(b *sb) []bool { return b.Truncateds })
}

// actionCol writes the actions column: rows of floats for real actions, and for integer
// ones int64 values converted as arrowbatch does, a scalar column for one per row.
func (c *columnWriter) actionCol(l arrowbatch.Layout, batches []*envrunner.SampleBatch) error {
	type sb = envrunner.SampleBatch
	if l.Actions == arrowbatch.RealActions {
		return c.floatRows(batches, l.ActionWidth, false, func(b *sb) []float32 { return b.Actions })
	}
	scalar := l.Actions == arrowbatch.IntActions
	return c.int64Rows(batches, l.ActionWidth, scalar, func(b *sb) []int64 {
		c.ints = c.ints[:0]
		for _, v := range b.Actions[:b.Count*l.ActionWidth] {
			c.ints = append(c.ints, arrowbatch.IntAction(v))
		}
		return c.ints
	})
}

// rowIDCols writes the columns that say where each row comes from (eps_id, env_id,
// agent_id, agent_index, module_id and t), and its infos.
func (c *columnWriter) rowIDCols(ids []string, batches []*envrunner.SampleBatch) error {
	type sb = envrunner.SampleBatch
	if err := c.int64Rows(batches, 1, true, func(b *sb) []int64 { return b.EpsID }); err != nil {
		return err
	}
	if err := c.int32Col(batches, func(b *sb) []int32 { return b.EnvID }); err != nil {
		return err
	}
	if err := c.agentIDs(batches); err != nil {
		return err
	}
	if err := c.int32Col(batches, func(b *sb) []int32 { return b.AgentIndex }); err != nil {
		return err
	}
	if err := c.moduleIDs(ids, batches); err != nil {
		return err
	}
	if err := c.int32Col(batches, func(b *sb) []int32 { return b.T }); err != nil {
		return err
	}
	return c.infos(batches)
}

// policyCols writes the optional columns of the policy's outputs that l has:
// action_dist_inputs, action_logp and vf_preds.
func (c *columnWriter) policyCols(l arrowbatch.Layout, batches []*envrunner.SampleBatch) error {
	type sb = envrunner.SampleBatch
	if l.DistWidth > 0 {
		if err := c.floatRows(batches, l.DistWidth, false, func(b *sb) []float32 { return b.ActionDistInputs }); err != nil {
			return err
		}
	}
	if l.ActionLogp {
		if err := c.floatRows(batches, 1, true, func(b *sb) []float32 { return b.ActionLogp }); err != nil {
			return err
		}
	}
	if l.VfPreds {
		return c.floatRows(batches, 1, true, func(b *sb) []float32 { return b.VfPreds })
	}
	return nil
}

// stateCols writes the RNN state columns l has, if any: every state_in_K, then every
// state_out_K, then seq_lens as one value per row (arrowbatch.AppendSeqLensPerRow).
func (c *columnWriter) stateCols(l arrowbatch.Layout, batches []*envrunner.SampleBatch) error {
	type sb = envrunner.SampleBatch
	if len(l.StateWidths) == 0 {
		return nil
	}
	for k, w := range l.StateWidths {
		if err := c.floatRows(batches, w, false, func(b *sb) []float32 { return b.StateIn[k] }); err != nil {
			return err
		}
	}
	for k, w := range l.StateWidths {
		if err := c.floatRows(batches, w, false, func(b *sb) []float32 { return b.StateOut[k] }); err != nil {
			return err
		}
	}
	return c.int32Col(batches, func(b *sb) []int32 {
		c.int32s = arrowbatch.AppendSeqLensPerRow(c.int32s[:0], b)
		return c.int32s
	})
}

// postprocessedCols writes the optional columns of postprocessing (GAE) that l has:
// advantages and value_targets.
func (c *columnWriter) postprocessedCols(l arrowbatch.Layout, batches []*envrunner.SampleBatch) error {
	type sb = envrunner.SampleBatch
	if l.Advantages {
		if err := c.floatRows(batches, 1, true, func(b *sb) []float32 { return b.Advantages }); err != nil {
			return err
		}
	}
	if l.ValueTargets {
		return c.floatRows(batches, 1, true, func(b *sb) []float32 { return b.ValueTargets })
	}
	return nil
}
