package output

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/internal/infojson"
	"github.com/onnxrl/sampler/internal/jsonappend"
	"github.com/onnxrl/sampler/spaces"
)

// AppendJSON appends the JSON form of m (one line, without the trailing newline) to dst and
// returns the extended buffer.
//
// When m has exactly one policy with rows and that policy is envrunner.DefaultPolicyID, the
// line is a plain SampleBatch, {"type":"SampleBatch",<columns>}, as RLlib's
// MultiAgentBatch.wrap_as_needed would return it (m.EnvSteps is not written then). Otherwise it
// is {"type":"MultiAgentBatch","count":<m.EnvSteps>,"policy_batches":{"<id>":{<columns>},...}}
// with the policies that have rows, in sorted order of their ids.
//
// The same batch always gives the same bytes. AppendJSON allocates nothing when dst has room
// for the line (and m has at most 16 policies with rows). It panics when a policy batch's
// columns do not match its Count and widths (a programmer error; see
// envrunner.SampleBatch.Validate).
func AppendJSON(dst []byte, m *envrunner.MultiAgentBatch) []byte {
	// The ids of the policies with rows. A stack array covers the usual handful of policies so
	// that encoding allocates nothing; more policies spill to the heap.
	var idBuf [16]string
	ids := idBuf[:0]
	for id, b := range m.PolicyBatches {
		if b != nil && b.Count > 0 {
			ids = append(ids, id)
		}
	}
	if len(ids) == 1 && ids[0] == envrunner.DefaultPolicyID {
		return AppendSampleBatchJSON(dst, m.PolicyBatches[ids[0]], true)
	}
	slices.Sort(ids)
	dst = append(dst, `{"type":"MultiAgentBatch","count":`...)
	dst = strconv.AppendInt(dst, int64(m.EnvSteps), 10)
	dst = append(dst, `,"policy_batches":{`...)
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonappend.String(dst, id)
		dst = append(dst, ':')
		dst = AppendSampleBatchJSON(dst, m.PolicyBatches[id], false)
	}
	return append(dst, "}}"...)
}

// AppendSampleBatchJSON appends the JSON object of one sample batch to dst and returns the
// extended buffer. With withType the object starts with "type":"SampleBatch" (a line of its
// own); without it, it is the form used inside "policy_batches".
//
// Columns come in a fixed order: obs, new_obs, actions, rewards, terminateds, truncateds,
// eps_id, env_id, agent_index, agent_id (when recorded), t, infos, then action_dist_inputs, action_logp, vf_preds,
// state_in_0.., state_out_0.., seq_lens, advantages, value_targets, where the optional ones
// are left out when empty. It panics when the columns do not match b.Count and the widths.
func AppendSampleBatchJSON(dst []byte, b *envrunner.SampleBatch, withType bool) []byte {
	if err := checkLayout(b); err != nil {
		panic(err)
	}
	n := b.Count
	dst = append(dst, '{')
	if withType {
		dst = append(dst, `"type":"SampleBatch",`...)
	}
	obsAt := len(dst) + len(`"obs":[`)
	dst = appendRows(dst, `"obs":`, b.Obs, n, b.ObsWidth)
	dst = appendNextRows(dst, `,"new_obs":`, b.NewObs, b.Obs, n, b.ObsWidth, obsAt)
	dst = appendActions(dst, b)
	dst = appendFloats(dst, `,"rewards":`, b.Rewards)
	dst = appendBools(dst, `,"terminateds":`, b.Terminateds)
	dst = appendBools(dst, `,"truncateds":`, b.Truncateds)
	dst = append(dst, `,"eps_id":[`...)
	for i, v := range b.EpsID {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, v, 10)
	}
	dst = append(dst, ']')
	dst = appendInt32s(dst, `,"env_id":`, b.EnvID)
	dst = appendInt32s(dst, `,"agent_index":`, b.AgentIndex)
	if len(b.AgentID) > 0 {
		dst = append(dst, `,"agent_id":[`...)
		for i, id := range b.AgentID {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonappend.String(dst, id)
		}
		dst = append(dst, ']')
	}
	dst = appendInt32s(dst, `,"t":`, b.T)
	dst = appendInfos(dst, b)
	if len(b.ActionDistInputs) > 0 {
		dst = appendRows(dst, `,"action_dist_inputs":`, b.ActionDistInputs, n, b.DistWidth)
	}
	if len(b.ActionLogp) > 0 {
		dst = appendFloats(dst, `,"action_logp":`, b.ActionLogp)
	}
	if len(b.VfPreds) > 0 {
		dst = appendFloats(dst, `,"vf_preds":`, b.VfPreds)
	}
	inRows := n // state_in: a row per row, or per sequence (StatePerSequence)
	if b.StatePerSequence {
		inRows = len(b.SeqLens)
	}
	for k, w := range b.StateWidths {
		dst = append(dst, `,"state_in_`...)
		dst = strconv.AppendInt(dst, int64(k), 10)
		dst = appendRows(dst, `":`, b.StateIn[k], inRows, w)
	}
	for k, w := range b.StateWidths {
		dst = append(dst, `,"state_out_`...)
		dst = strconv.AppendInt(dst, int64(k), 10)
		dst = appendRows(dst, `":`, b.StateOut[k], n, w)
	}
	if len(b.SeqLens) > 0 {
		dst = appendInt32s(dst, `,"seq_lens":`, b.SeqLens)
	}
	if len(b.Advantages) > 0 {
		dst = appendFloats(dst, `,"advantages":`, b.Advantages)
	}
	if len(b.ValueTargets) > 0 {
		dst = appendFloats(dst, `,"value_targets":`, b.ValueTargets)
	}
	return append(dst, '}')
}

// checkLayout reports the first column whose length does not match the batch's Count and
// widths, the condition under which the encoder can write every column row by row. It
// allocates only when it fails.
func checkLayout(b *envrunner.SampleBatch) error {
	n := b.Count
	if n < 0 {
		return fmt.Errorf("output: sample batch has Count %d", n)
	}
	if b.ObsWidth < 0 || b.ActionWidth < 0 || b.DistWidth < 0 {
		return fmt.Errorf("output: sample batch has a negative width (obs %d, action %d, dist %d)",
			b.ObsWidth, b.ActionWidth, b.DistWidth)
	}
	type col struct {
		name     string
		got, w   int
		optional bool
	}
	cols := [...]col{
		{"obs", len(b.Obs), b.ObsWidth, false},
		{"new_obs", len(b.NewObs), b.ObsWidth, false},
		{"actions", len(b.Actions), b.ActionWidth, false},
		{"rewards", len(b.Rewards), 1, false},
		{"terminateds", len(b.Terminateds), 1, false},
		{"truncateds", len(b.Truncateds), 1, false},
		{"eps_id", len(b.EpsID), 1, false},
		{"env_id", len(b.EnvID), 1, false},
		{"agent_index", len(b.AgentIndex), 1, false},
		{"agent_id", len(b.AgentID), 1, true},
		{"t", len(b.T), 1, false},
		{"infos", len(b.Infos), 1, true},
		{"action_dist_inputs", len(b.ActionDistInputs), b.DistWidth, true},
		{"action_logp", len(b.ActionLogp), 1, true},
		{"vf_preds", len(b.VfPreds), 1, true},
		{"advantages", len(b.Advantages), 1, true},
		{"value_targets", len(b.ValueTargets), 1, true},
	}
	for _, c := range cols {
		if c.got != n*c.w && (!c.optional || c.got != 0) {
			return fmt.Errorf("output: sample batch column %s has %d values, want %d (%d rows of %d)",
				c.name, c.got, n*c.w, n, c.w)
		}
	}
	if len(b.StateIn) < len(b.StateWidths) || len(b.StateOut) < len(b.StateWidths) {
		return fmt.Errorf("output: sample batch has %d state widths but %d state_in and %d state_out columns",
			len(b.StateWidths), len(b.StateIn), len(b.StateOut))
	}
	inRows := n
	if b.StatePerSequence {
		inRows = len(b.SeqLens)
	}
	for k, w := range b.StateWidths {
		if w < 0 {
			return fmt.Errorf("output: sample batch state %d has width %d", k, w)
		}
		if got := len(b.StateIn[k]); got != inRows*w {
			return fmt.Errorf("output: sample batch column state_in_%d has %d values, want %d (%d rows of %d)",
				k, got, inRows*w, inRows, w)
		}
		if got := len(b.StateOut[k]); got != n*w {
			return fmt.Errorf("output: sample batch column state_out_%d has %d values, want %d (%d rows of %d)",
				k, got, n*w, n, w)
		}
	}
	return nil
}

// appendInfos writes the infos column, RLlib's per-row infos: {} for every row of a batch
// without infos (a few bytes a row, no allocation), else each row's info as an object.
func appendInfos(dst []byte, b *envrunner.SampleBatch) []byte {
	dst = append(dst, `,"infos":[`...)
	if len(b.Infos) == 0 {
		for i := range b.Count {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '{', '}')
		}
		return append(dst, ']')
	}
	for i, info := range b.Infos {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = infojson.Append(dst, info)
	}
	return append(dst, ']')
}

// appendRows writes key and n rows of width w of the flat column col as a list of lists.
func appendRows(dst []byte, key string, col []float32, n, w int) []byte {
	dst = append(dst, key...)
	dst = append(dst, '[')
	for i := 0; i < n; i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendReals(dst, col[i*w:i*w+w])
	}
	return append(dst, ']')
}

// appendNextRows writes new_obs as appendRows does, but copies the text of a row that equals
// (bit for bit) the next row of obs, as it does within an episode, from obs's text, which
// starts at dst[obsAt] (its first row's '['). A copy costs a fraction of formatting the floats
// again: BenchmarkAppendJSON/cartpole/rows=4000 went from 1.74M to 2.35-2.40M rows/s.
func appendNextRows(dst []byte, key string, col, obs []float32, n, w, obsAt int) []byte {
	dst = append(dst, key...)
	dst = append(dst, '[')
	next := obsAt // the text of obs row i+1 starts here
	if n > 0 {
		next += bytes.IndexByte(dst[obsAt:], ']') + 2 // past "],"
	}
	for i := 0; i < n; i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		row := col[i*w : i*w+w]
		if i+1 < n {
			end := next + bytes.IndexByte(dst[next:], ']') + 1
			if sameBits(row, obs[(i+1)*w:(i+2)*w]) {
				dst = append(dst, dst[next:end]...)
				next = end + 1
				continue
			}
			next = end + 1
		}
		dst = appendReals(dst, row)
	}
	return append(dst, ']')
}

// sameBits reports whether a and b (of the same length) hold the same bits.
func sameBits(a, b []float32) bool {
	b = b[:len(a)]
	for i, v := range a {
		if math.Float32bits(v) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// appendActions writes the actions column: integers for the integer spaces (a flat list for
// Discrete, a list of rows for MultiDiscrete and MultiBinary), rows of floats for the rest.
func appendActions(dst []byte, b *envrunner.SampleBatch) []byte {
	n, w := b.Count, b.ActionWidth
	switch b.ActionSpace.(type) {
	case *spaces.Discrete:
		if w == 1 {
			dst = append(dst, `,"actions":[`...)
			for i, v := range b.Actions[:n] {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = appendIntValue(dst, v)
			}
			return append(dst, ']')
		}
	case *spaces.MultiDiscrete, *spaces.MultiBinary:
	default:
		return appendRows(dst, `,"actions":`, b.Actions, n, w)
	}
	dst = append(dst, `,"actions":[`...)
	for i := 0; i < n; i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '[')
		for j, v := range b.Actions[i*w : i*w+w] {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendIntValue(dst, v)
		}
		dst = append(dst, ']')
	}
	return append(dst, ']')
}

// maxExactInt is 2^53: every integral float32 up to it converts to int64 exactly.
const maxExactInt = 1 << 53

// appendIntValue writes an action of an integer space as a JSON integer. A value that is not
// an integer (NaN, 0.5, beyond 2^53) cannot come from a valid action; it is written as a
// float so that nothing is lost.
func appendIntValue(dst []byte, v float32) []byte {
	if f := float64(v); f == math.Trunc(f) && math.Abs(f) <= maxExactInt {
		return strconv.AppendInt(dst, int64(f), 10)
	}
	return jsonappend.Float32(dst, v)
}

func appendFloats(dst []byte, key string, col []float32) []byte {
	return appendReals(append(dst, key...), col)
}

// appendReals writes v as a JSON list of reals (jsonappend.Float32Real: 1.0, not 1).
func appendReals(dst []byte, v []float32) []byte {
	dst = append(dst, '[')
	for i, x := range v {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonappend.Float32Real(dst, x)
	}
	return append(dst, ']')
}

func appendBools(dst []byte, key string, col []bool) []byte {
	dst = append(dst, key...)
	dst = append(dst, '[')
	for i, v := range col {
		if i > 0 {
			dst = append(dst, ',')
		}
		if v {
			dst = append(dst, "true"...)
		} else {
			dst = append(dst, "false"...)
		}
	}
	return append(dst, ']')
}

func appendInt32s(dst []byte, key string, col []int32) []byte {
	dst = append(dst, key...)
	dst = append(dst, '[')
	for i, v := range col {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, int64(v), 10)
	}
	return append(dst, ']')
}

// smallInt: see jsonappend.SmallInt (the decoder's integer check uses it too).
const smallInt = jsonappend.SmallInt
