package output

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/arrowbatch"
	"github.com/onnxrl/sampler/internal/infojson"
	"github.com/onnxrl/sampler/internal/jsonscan"
	"github.com/onnxrl/sampler/spaces"
)

// SyntaxError is a line that is not the JSON this package reads, at byte Offset of the line.
type SyntaxError = jsonscan.SyntaxError

// Decode reads one line written by AppendJSON (or by RLlib's JSON writer, uncompressed, with
// the columns this package knows) back into a MultiAgentBatch. A SampleBatch line becomes a
// batch with one envrunner.DefaultPolicyID policy and EnvSteps = AgentSteps = its row count;
// a MultiAgentBatch line keeps its "count" as EnvSteps, and AgentSteps is the sum of the rows.
// Trailing whitespace (the newline) is allowed.
//
// The action space is not in the line, so Decode infers a stand-in that makes AppendJSON write
// the actions the same way again: a flat list of integers gives a Discrete (Start the
// smallest action, N the span), a list of integer rows a MultiDiscrete (Nvec one more than the
// largest value of each element, at least 1), anything else a nil space (rows of floats).
// A number counts as an integer when it is written as one (no point, no exponent) up to 2^53;
// floats (1.0, 2e0), "-0" and larger values make the column real. (Files written before
// floats got their point have integral real actions as integers; those read as integers.)
// Widths come from the row lengths.
//
// NaN, Infinity and -Infinity are accepted. Unknown or missing columns, ragged rows, columns
// of different row counts, integers out of range and malformed JSON are errors that name the
// policy, the column and, for syntax, the byte offset (a *SyntaxError in the chain).
func Decode(line []byte) (*envrunner.MultiAgentBatch, error) {
	m, err := decode(line)
	if err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	return m, nil
}

func decode(line []byte) (*envrunner.MultiAgentBatch, error) {
	d := newDecoder(line)
	var l batchLine
	// A SampleBatch's columns, kept out of l: its policies' map would take them to the heap.
	top := newParts()
	err := d.object(func(key string) error {
		if ok, err := l.member(d, key); ok {
			return err
		}
		if l.firstTopLevelCol == "" {
			l.firstTopLevelCol = key
		}
		return top.column(d, key)
	})
	if err != nil {
		return nil, err
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	if !l.haveType {
		return nil, errors.New(`missing "type" (want "SampleBatch" or "MultiAgentBatch")`)
	}
	switch l.typ {
	case "SampleBatch":
		return l.sampleBatch(top)
	case "MultiAgentBatch":
		return l.multiAgentBatch()
	}
	return nil, fmt.Errorf(`"type" is %q, want "SampleBatch" or "MultiAgentBatch"`, l.typ)
}

// batchLine holds what decode reads of a line's top-level members but the columns of a
// SampleBatch: which batch it is and, for a MultiAgentBatch, its policies' columns. Which
// members a line may have depends on its "type", which may come after them.
type batchLine struct {
	typ              string
	haveType         bool
	count            int64
	haveCount        bool
	policies         map[string]*parts
	havePolicies     bool
	policyOrder      []string
	firstTopLevelCol string
}

// member reads the value of key when it is one of the batch's own members, "type", "count"
// or "policy_batches" (each policy's columns, in the order of the line), and reports whether
// it was: any other key is a column of a SampleBatch.
func (l *batchLine) member(d *decoder, key string) (bool, error) {
	switch key {
	case "type":
		s, err := d.str()
		if err != nil {
			return true, fmt.Errorf(`"type": %w`, err)
		}
		l.typ, l.haveType = s, true
		return true, nil
	case "count":
		v, err := d.Int(0, math.MaxInt)
		if err != nil {
			return true, fmt.Errorf(`"count": %w`, err)
		}
		l.count, l.haveCount = v, true
		return true, nil
	case "policy_batches":
		l.havePolicies = true
		l.policies = make(map[string]*parts)
		return true, d.object(func(pid string) error {
			p := newParts()
			if err := d.object(func(col string) error { return p.column(d, col) }); err != nil {
				return fmt.Errorf("policy %q: %w", pid, err)
			}
			l.policies[pid] = p
			l.policyOrder = append(l.policyOrder, pid)
			return nil
		})
	}
	return false, nil
}

// sampleBatch returns the batch of a SampleBatch line of columns top: one policy,
// envrunner.DefaultPolicyID, every row an env step.
func (l *batchLine) sampleBatch(top *parts) (*envrunner.MultiAgentBatch, error) {
	if l.haveCount || l.havePolicies {
		return nil, errors.New(`a SampleBatch has no "count" or "policy_batches"`)
	}
	b, err := top.build()
	if err != nil {
		return nil, err
	}
	m := &envrunner.MultiAgentBatch{PolicyBatches: map[string]*envrunner.SampleBatch{envrunner.DefaultPolicyID: b}}
	m.EnvSteps, m.AgentSteps = b.Count, b.Count
	return m, nil
}

// multiAgentBatch returns the batch of a MultiAgentBatch line: "count" env steps, and the
// policies' batches, built in the order of the line (the first error is the one returned).
func (l *batchLine) multiAgentBatch() (*envrunner.MultiAgentBatch, error) {
	if l.firstTopLevelCol != "" {
		return nil, fmt.Errorf("unexpected column %q in a MultiAgentBatch (columns belong in policy_batches)", l.firstTopLevelCol)
	}
	if !l.haveCount {
		return nil, errors.New(`MultiAgentBatch without "count"`)
	}
	if !l.havePolicies {
		return nil, errors.New(`MultiAgentBatch without "policy_batches"`)
	}
	m := &envrunner.MultiAgentBatch{PolicyBatches: make(map[string]*envrunner.SampleBatch), EnvSteps: int(l.count)}
	for _, pid := range l.policyOrder {
		b, err := l.policies[pid].build()
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", pid, err)
		}
		m.PolicyBatches[pid] = b
		m.AgentSteps += b.Count
	}
	return m, nil
}

// column kinds
const (
	kindRows    = iota // list of float rows
	kindFloats         // flat floats
	kindBools          // flat bools
	kindInt64s         // flat int64
	kindInt32s         // flat int32
	kindActions        // flat or rows, integers or floats
	kindStrings        // flat strings
	kindInfos          // objects (infos)
)

var columnKinds = map[string]int{
	"obs":                kindRows,
	"new_obs":            kindRows,
	"actions":            kindActions,
	"rewards":            kindFloats,
	"terminateds":        kindBools,
	"truncateds":         kindBools,
	"eps_id":             kindInt64s,
	"env_id":             kindInt32s,
	"agent_index":        kindInt32s,
	"agent_id":           kindStrings,
	"t":                  kindInt32s,
	"infos":              kindInfos,
	"action_dist_inputs": kindRows,
	"action_logp":        kindFloats,
	"vf_preds":           kindFloats,
	"seq_lens":           kindInt32s,
	"advantages":         kindFloats,
	"value_targets":      kindFloats,
}

var requiredColumns = [...]string{"obs", "new_obs", "actions", "rewards", "terminateds",
	"truncateds", "eps_id", "env_id", "agent_index", "t"}

// optionalColumns are the optional columns of one value per row (seq_lens has one per sequence).
var optionalColumns = [...]string{"agent_id", "infos", "action_dist_inputs", "action_logp", "vf_preds",
	"advantages", "value_targets"}

// maxStates bounds the k of state_in_k / state_out_k.
const maxStates = 1024

// column is one parsed column.
type column struct {
	rows  int
	width int // row length of a list of rows; -1 for a flat list
	f     []float32
	i     []int64
	b     []bool
	s     []string
	infos []env.Info // nil where a row's info is {}; nil altogether when every row's is
	ints  bool       // actions: every value is an integer (see Decode)
}

// parts holds the columns of one sample batch as they are read.
type parts struct {
	cols     map[string]*column
	stateIn  map[int]*column
	stateOut map[int]*column
}

func newParts() *parts {
	return &parts{cols: map[string]*column{}, stateIn: map[int]*column{}, stateOut: map[int]*column{}}
}

// column reads the value of column name.
func (p *parts) column(d *decoder, name string) error {
	kind, ok := columnKinds[name]
	var state map[int]*column
	k := -1
	if !ok {
		if s, found := strings.CutPrefix(name, "state_in_"); found {
			k, state = stateIndex(s), p.stateIn
		} else if s, found := strings.CutPrefix(name, "state_out_"); found {
			k, state = stateIndex(s), p.stateOut
		}
		if k < 0 {
			return fmt.Errorf("unknown column %q", name)
		}
		kind = kindRows
	}
	c, err := d.column(kind)
	if err != nil {
		return fmt.Errorf("column %q: %w", name, err)
	}
	if state != nil {
		if state[k] != nil {
			return fmt.Errorf("column %q appears twice", name)
		}
		state[k] = c
		return nil
	}
	if p.cols[name] != nil {
		return fmt.Errorf("column %q appears twice", name)
	}
	p.cols[name] = c
	return nil
}

// stateIndex parses the k of state_in_k: a decimal without leading zeros below maxStates, or -1.
func stateIndex(s string) int {
	if s == "" || len(s) > 4 || (len(s) > 1 && s[0] == '0') {
		return -1
	}
	k := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return -1
		}
		k = k*10 + int(s[i]-'0')
	}
	if k >= maxStates {
		return -1
	}
	return k
}

// build checks the columns against each other and assembles the batch.
func (p *parts) build() (*envrunner.SampleBatch, error) {
	n, err := p.rows()
	if err != nil {
		return nil, err
	}
	b := &envrunner.SampleBatch{Count: n}
	if err := p.buildTransitions(b); err != nil {
		return nil, err
	}
	b.EpsID = p.cols["eps_id"].i
	b.EnvID = int32s(p.cols["env_id"].i)
	b.AgentIndex = int32s(p.cols["agent_index"].i)
	if c := p.optional("agent_id"); c != nil {
		b.AgentID = c.s
	}
	b.T = int32s(p.cols["t"].i)
	if c := p.cols["infos"]; c != nil && c.infos != nil {
		b.Infos = c.infos
	}
	if c := p.optional("action_dist_inputs"); c != nil {
		b.ActionDistInputs, b.DistWidth = c.f, c.width
	}
	b.ActionLogp = p.optionalFloats("action_logp")
	b.VfPreds = p.optionalFloats("vf_preds")
	b.Advantages = p.optionalFloats("advantages")
	b.ValueTargets = p.optionalFloats("value_targets")
	if c := p.optional("seq_lens"); c != nil {
		b.SeqLens = int32s(c.i)
	}
	if err := p.buildState(b); err != nil {
		return nil, err
	}
	return b, nil
}

// rows returns the batch's row count, the rows of "obs", once it has checked that every
// required column is there with that many rows, and that every optional column of a value
// per row has that many or none (an empty list, which leaves the column out).
func (p *parts) rows() (int, error) {
	for _, name := range requiredColumns {
		if p.cols[name] == nil {
			return 0, fmt.Errorf("missing column %q", name)
		}
	}
	n := p.cols["obs"].rows
	for _, name := range requiredColumns[1:] {
		if c := p.cols[name]; c.rows != n {
			return 0, fmt.Errorf("column %q has %d rows, want %d (the rows of \"obs\")", name, c.rows, n)
		}
	}
	for _, name := range optionalColumns {
		if c := p.cols[name]; c != nil && c.rows != 0 && c.rows != n {
			return 0, fmt.Errorf("column %q has %d rows, want %d (the rows of \"obs\")", name, c.rows, n)
		}
	}
	return n, nil
}

// buildTransitions sets the columns of the transitions themselves, obs to truncateds,
// checking that the rows of new_obs are as wide as those of obs.
func (p *parts) buildTransitions(b *envrunner.SampleBatch) error {
	obs, newObs := p.cols["obs"], p.cols["new_obs"]
	if b.Count > 0 {
		b.ObsWidth = obs.width
		if w := newObs.width; w != b.ObsWidth {
			return fmt.Errorf("column \"new_obs\" has rows of %d values, want %d (the width of \"obs\")", w, b.ObsWidth)
		}
	}
	b.Obs, b.NewObs = obs.f, newObs.f
	p.buildActions(b)
	b.Rewards = p.cols["rewards"].f
	b.Terminateds = p.cols["terminateds"].b
	b.Truncateds = p.cols["truncateds"].b
	return nil
}

// buildActions sets the actions of a batch with rows (one without keeps none, and width
// 0): their width, 1 for a flat list (a value per row), and for integers the stand-in space
// of Decode.
func (p *parts) buildActions(b *envrunner.SampleBatch) {
	if b.Count == 0 {
		return
	}
	a := p.cols["actions"]
	b.Actions = a.f
	b.ActionWidth = a.width
	if a.width < 0 { // a flat list: one value per row
		b.ActionWidth = 1
	}
	if a.ints {
		b.ActionSpace = integerSpace(a)
	}
}

// optional returns the optional column name when the line has it with rows, nil when it is
// missing or empty: the batch leaves such a column out (nil).
func (p *parts) optional(name string) *column {
	if c := p.cols[name]; c != nil && c.rows > 0 {
		return c
	}
	return nil
}

// optionalFloats returns the values of the optional column name of a float per row, nil
// when the batch leaves it out (see optional).
func (p *parts) optionalFloats(name string) []float32 {
	if c := p.optional(name); c != nil {
		return c.f
	}
	return nil
}

// buildState sets the RNN state columns and checks seq_lens against them.
func (p *parts) buildState(b *envrunner.SampleBatch) error {
	k := max(len(p.stateIn), len(p.stateOut))
	for i := 0; i < k; i++ {
		in, out := p.stateIn[i], p.stateOut[i]
		switch {
		case in == nil:
			return fmt.Errorf("missing column \"state_in_%d\" (there are %d state columns)", i, k)
		case out == nil:
			return fmt.Errorf("missing column \"state_out_%d\" (there are %d state columns)", i, k)
		case in.rows != b.Count && in.rows != len(b.SeqLens):
			return fmt.Errorf("column \"state_in_%d\" has %d rows, want %d (the rows of \"obs\") or %d (one per seq_lens entry)", i, in.rows, b.Count, len(b.SeqLens))
		case out.rows != b.Count:
			return fmt.Errorf("column \"state_out_%d\" has %d rows, want %d (the rows of \"obs\")", i, out.rows, b.Count)
		}
		w := 0
		if b.Count > 0 {
			w = in.width
			if out.width != w {
				return fmt.Errorf("column \"state_out_%d\" has rows of %d values, want %d (the width of \"state_in_%d\")", i, out.width, w, i)
			}
		}
		if i == 0 {
			// RLlib's layout: a row per sequence (the same as a row per row when every
			// sequence has one row).
			b.StatePerSequence = in.rows != b.Count
		} else if b.StatePerSequence != (in.rows != b.Count) {
			return fmt.Errorf("column \"state_in_%d\" has %d rows, and \"state_in_0\" the other layout", i, in.rows)
		}
		b.StateWidths = append(b.StateWidths, w)
		b.StateIn = append(b.StateIn, in.f)
		b.StateOut = append(b.StateOut, out.f)
	}
	if k == 0 {
		return nil
	}
	sum := int64(0)
	for _, l := range b.SeqLens {
		if l < 0 {
			return fmt.Errorf("column \"seq_lens\" has a negative length %d", l)
		}
		sum += int64(l)
	}
	if sum != int64(b.Count) {
		return fmt.Errorf("column \"seq_lens\" adds up to %d, want %d (the rows of \"obs\")", sum, b.Count)
	}
	return nil
}

// integerSpace returns the stand-in space of an integer actions column (see Decode).
func integerSpace(a *column) spaces.Space {
	return arrowbatch.StandInSpace(a.f, a.width, a.width < 0)
}

func int32s(v []int64) []int32 {
	if len(v) == 0 {
		return nil
	}
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}

// decoder reads the shapes of this format with the shared JSON scanner.
type decoder struct {
	jsonscan.Scanner
}

func newDecoder(line []byte) *decoder {
	d := &decoder{}
	d.Reset(line)
	d.Input = "line"
	return d
}

// expect checks that the next byte is c, without reading it.
func (d *decoder) expect(c byte) error {
	if d.Peek() != c {
		return d.Unexpected(fmt.Sprintf("%q", c))
	}
	return nil
}

// end checks that only whitespace follows.
func (d *decoder) end() error {
	if !d.Empty() {
		return d.Errorf("unexpected %q after the object", d.Peek())
	}
	return nil
}

// object reads an object, calling member for each key with the decoder at the value.
// Duplicate keys are errors.
func (d *decoder) object(member func(key string) error) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	var seen map[string]bool
	return d.Object(func(k []byte) error {
		key := string(k)
		if seen[key] {
			return &SyntaxError{Offset: d.Offset(), Msg: fmt.Sprintf("duplicate key %q", key)}
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		seen[key] = true
		return member(key)
	})
}

// list reads an array, calling elem for each element with the decoder at it.
func (d *decoder) list(elem func() error) error {
	if err := d.expect('['); err != nil {
		return err
	}
	elems, err := d.ArrayStart()
	for elems && err == nil {
		if err = elem(); err == nil {
			elems, err = d.ArrayNext()
		}
	}
	return err
}

// str reads a string.
func (d *decoder) str() (string, error) {
	if err := d.expect('"'); err != nil {
		return "", err
	}
	s, err := d.String()
	return string(s), err
}

// intCompatible reports whether a value read from the token can be an integer action:
// AppendJSON writes it as an integer either way, so reading it back gives the same column.
func intCompatible(v float32, isInt bool) bool {
	f := float64(v)
	if f != math.Trunc(f) || (f == 0 && math.Signbit(f)) {
		return false // NaN, fractions, -0
	}
	// Floats are written with a point or an exponent (1.0, 1e+06); files written before that
	// wrote whole floats as integers, so an integral column of reals reads as integers there.
	return isInt && math.Abs(f) <= maxExactInt
}

// column reads a column value of the given kind.
func (d *decoder) column(kind int) (*column, error) {
	c := &column{width: -1}
	var err error
	switch kind {
	case kindFloats:
		err = d.floats(c)
	case kindBools:
		err = d.bools(c)
	case kindStrings:
		err = d.strs(c)
	case kindInfos:
		err = d.infos(c)
	case kindInt64s:
		err = d.ints(c, math.MinInt64, math.MaxInt64)
	case kindInt32s:
		err = d.ints(c, math.MinInt32, math.MaxInt32)
	default:
		// Rows, or for actions rows or a flat list.
		if err := d.rows(c, kind == kindActions); err != nil {
			return nil, err
		}
	}
	return c, err
}

// floats reads a flat list of floats into c.
func (d *decoder) floats(c *column) error {
	err := d.list(func() error {
		v, err := d.Float32()
		c.f = append(c.f, v)
		return err
	})
	c.rows = len(c.f)
	return err
}

// bools reads a flat list of booleans into c.
func (d *decoder) bools(c *column) error {
	err := d.list(func() error {
		v, err := d.Bool()
		c.b = append(c.b, v)
		return err
	})
	c.rows = len(c.b)
	return err
}

// strs reads a flat list of strings into c.
func (d *decoder) strs(c *column) error {
	err := d.list(func() error {
		v, err := d.str()
		c.s = append(c.s, v)
		return err
	})
	c.rows = len(c.s)
	return err
}

// infos reads a list of infos (objects) into c: c.infos stays nil while every row's info is
// {}, so a column of empty infos costs nothing.
func (d *decoder) infos(c *column) error {
	return d.list(func() error {
		info, err := infojson.Read(&d.Scanner)
		if info != nil && c.infos == nil {
			c.infos = make([]env.Info, c.rows, c.rows+1) // the rows before had none
		}
		if c.infos != nil {
			c.infos = append(c.infos, info)
		}
		c.rows++
		return err
	})
}

// ints reads a flat list of integers in [lo, hi] into c.
func (d *decoder) ints(c *column, lo, hi int64) error {
	err := d.list(func() error {
		v, err := d.Int(lo, hi)
		c.i = append(c.i, v)
		return err
	})
	c.rows = len(c.i)
	return err
}

// rows reads a list of rows of floats of one width into c or, for actions, a list of rows or
// a flat list (a value per row, when the first element is not a list). Actions are integers
// (c.ints) while every value is.
func (d *decoder) rows(c *column, actions bool) error {
	c.ints = actions
	flat := false
	// value appends the next number to c.f, clearing c.ints when it cannot be an integer
	// action. It is handed to d.list as it is, not wrapped around a method, to keep a call a
	// value off Decode's hottest loop.
	value := func() error {
		v, isInt, err := d.Float32Int()
		if err != nil {
			return err
		}
		if c.ints && !intCompatible(v, isInt) {
			c.ints = false
		}
		c.f = append(c.f, v)
		return nil
	}
	return d.list(func() error {
		if actions && c.rows == 0 && d.Peek() != '[' {
			flat = true
		}
		if flat {
			return d.flatAction(c, value)
		}
		return d.row(c, value)
	})
}

// flatAction reads the next element of a flat list of actions, a row of its own, with
// value.
func (d *decoder) flatAction(c *column, value func() error) error {
	if d.Peek() == '[' {
		return d.Errorf("row %d is a list in a flat list of actions", c.rows)
	}
	if err := value(); err != nil {
		return err
	}
	c.rows++
	return nil
}

// row reads the next row of a list of rows, its values with value; it must be as long as
// the first.
func (d *decoder) row(c *column, value func() error) error {
	before := len(c.f)
	at := d.Offset()
	if err := d.list(value); err != nil {
		return err
	}
	w := len(c.f) - before
	if c.rows == 0 {
		c.width = w
	} else if w != c.width {
		return d.ErrorAt(at, "row %d has %d values, want %d (the length of row 0)", c.rows, w, c.width)
	}
	c.rows++
	return nil
}
