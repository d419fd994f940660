package output

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/arrowbatch"
	"github.com/onnxrl/sampler/spaces"
)

// SyntaxError is a line that is not the JSON this package reads, at byte Offset of the line.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.Msg, e.Offset) }

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
	d := &decoder{data: line}
	var (
		typ              string
		haveType         bool
		count            int64
		haveCount        bool
		policies         map[string]*parts
		havePolicies     bool
		top              = newParts()
		policyOrder      []string
		firstTopLevelCol string
	)
	err := d.object(func(key string) error {
		switch key {
		case "type":
			s, err := d.str()
			if err != nil {
				return fmt.Errorf(`"type": %w`, err)
			}
			typ, haveType = s, true
			return nil
		case "count":
			v, err := d.int(0, math.MaxInt)
			if err != nil {
				return fmt.Errorf(`"count": %w`, err)
			}
			count, haveCount = v, true
			return nil
		case "policy_batches":
			havePolicies = true
			policies = make(map[string]*parts)
			return d.object(func(pid string) error {
				p := newParts()
				if err := d.object(func(col string) error { return p.column(d, col) }); err != nil {
					return fmt.Errorf("policy %q: %w", pid, err)
				}
				policies[pid] = p
				policyOrder = append(policyOrder, pid)
				return nil
			})
		}
		if firstTopLevelCol == "" {
			firstTopLevelCol = key
		}
		return top.column(d, key)
	})
	if err != nil {
		return nil, err
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	if !haveType {
		return nil, errors.New(`missing "type" (want "SampleBatch" or "MultiAgentBatch")`)
	}
	m := &envrunner.MultiAgentBatch{PolicyBatches: make(map[string]*envrunner.SampleBatch)}
	switch typ {
	case "SampleBatch":
		if haveCount || havePolicies {
			return nil, errors.New(`a SampleBatch has no "count" or "policy_batches"`)
		}
		b, err := top.build()
		if err != nil {
			return nil, err
		}
		m.PolicyBatches[envrunner.DefaultPolicyID] = b
		m.EnvSteps, m.AgentSteps = b.Count, b.Count
	case "MultiAgentBatch":
		if firstTopLevelCol != "" {
			return nil, fmt.Errorf("unexpected column %q in a MultiAgentBatch (columns belong in policy_batches)", firstTopLevelCol)
		}
		if !haveCount {
			return nil, errors.New(`MultiAgentBatch without "count"`)
		}
		if !havePolicies {
			return nil, errors.New(`MultiAgentBatch without "policy_batches"`)
		}
		m.EnvSteps = int(count)
		for _, pid := range policyOrder {
			b, err := policies[pid].build()
			if err != nil {
				return nil, fmt.Errorf("policy %q: %w", pid, err)
			}
			m.PolicyBatches[pid] = b
			m.AgentSteps += b.Count
		}
	default:
		return nil, fmt.Errorf(`"type" is %q, want "SampleBatch" or "MultiAgentBatch"`, typ)
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
	"t":                  kindInt32s,
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
var optionalColumns = [...]string{"action_dist_inputs", "action_logp", "vf_preds", "advantages",
	"value_targets"}

// maxStates bounds the k of state_in_k / state_out_k.
const maxStates = 1024

// column is one parsed column.
type column struct {
	rows  int
	width int // row length of a list of rows; -1 for a flat list
	f     []float32
	i     []int64
	b     []bool
	ints  bool // actions: every value is an integer (see Decode)
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
	for _, name := range requiredColumns {
		if p.cols[name] == nil {
			return nil, fmt.Errorf("missing column %q", name)
		}
	}
	obs := p.cols["obs"]
	n := obs.rows
	for _, name := range requiredColumns[1:] {
		if c := p.cols[name]; c.rows != n {
			return nil, fmt.Errorf("column %q has %d rows, want %d (the rows of \"obs\")", name, c.rows, n)
		}
	}
	for _, name := range optionalColumns {
		if c := p.cols[name]; c != nil && c.rows != 0 && c.rows != n {
			return nil, fmt.Errorf("column %q has %d rows, want %d (the rows of \"obs\")", name, c.rows, n)
		}
	}
	b := &envrunner.SampleBatch{Count: n}
	if n > 0 {
		b.ObsWidth = obs.width
		if w := p.cols["new_obs"].width; w != b.ObsWidth {
			return nil, fmt.Errorf("column \"new_obs\" has rows of %d values, want %d (the width of \"obs\")", w, b.ObsWidth)
		}
	}
	b.Obs, b.NewObs = obs.f, p.cols["new_obs"].f
	if a := p.cols["actions"]; n > 0 {
		b.Actions = a.f
		b.ActionWidth = a.width
		if a.width < 0 { // a flat list: one value per row
			b.ActionWidth = 1
		}
		if a.ints {
			b.ActionSpace = integerSpace(a)
		}
	}
	b.Rewards = p.cols["rewards"].f
	b.Terminateds = p.cols["terminateds"].b
	b.Truncateds = p.cols["truncateds"].b
	b.EpsID = p.cols["eps_id"].i
	b.EnvID = int32s(p.cols["env_id"].i)
	b.AgentIndex = int32s(p.cols["agent_index"].i)
	b.T = int32s(p.cols["t"].i)
	if c := p.cols["action_dist_inputs"]; c != nil && c.rows > 0 {
		b.ActionDistInputs, b.DistWidth = c.f, c.width
	}
	if c := p.cols["action_logp"]; c != nil && c.rows > 0 {
		b.ActionLogp = c.f
	}
	if c := p.cols["vf_preds"]; c != nil && c.rows > 0 {
		b.VfPreds = c.f
	}
	if c := p.cols["advantages"]; c != nil && c.rows > 0 {
		b.Advantages = c.f
	}
	if c := p.cols["value_targets"]; c != nil && c.rows > 0 {
		b.ValueTargets = c.f
	}
	if c := p.cols["seq_lens"]; c != nil && c.rows > 0 {
		b.SeqLens = int32s(c.i)
	}
	if err := p.buildState(b); err != nil {
		return nil, err
	}
	return b, nil
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
		case in.rows != b.Count:
			return fmt.Errorf("column \"state_in_%d\" has %d rows, want %d (the rows of \"obs\")", i, in.rows, b.Count)
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

// decoder is a small JSON reader for the shapes of this format.
type decoder struct {
	data []byte
	pos  int
}

func (d *decoder) errorf(format string, args ...any) error {
	return &SyntaxError{Offset: d.pos, Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte (0 at the end).
func (d *decoder) peek() byte {
	d.ws()
	if d.pos >= len(d.data) {
		return 0
	}
	return d.data[d.pos]
}

func (d *decoder) expect(c byte) error {
	if got := d.peek(); got != c {
		return d.unexpected(fmt.Sprintf("%q", c))
	}
	d.pos++
	return nil
}

func (d *decoder) unexpected(want string) error {
	if d.pos >= len(d.data) {
		return d.errorf("unexpected end of line, want %s", want)
	}
	return d.errorf("unexpected %q, want %s", d.data[d.pos], want)
}

// end checks that only whitespace follows.
func (d *decoder) end() error {
	if d.peek() != 0 || d.pos < len(d.data) {
		return d.errorf("unexpected %q after the object", d.data[d.pos])
	}
	return nil
}

// object reads an object, calling member for each key with the decoder at the value.
// Duplicate keys are errors.
func (d *decoder) object(member func(key string) error) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	if d.peek() == '}' {
		d.pos++
		return nil
	}
	seen := map[string]bool{}
	for {
		at := d.pos
		if d.peek() != '"' {
			return d.unexpected("a string key")
		}
		key, err := d.str()
		if err != nil {
			return err
		}
		if seen[key] {
			d.pos = at
			return d.errorf("duplicate key %q", key)
		}
		seen[key] = true
		if err := d.expect(':'); err != nil {
			return err
		}
		if err := member(key); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return nil
		default:
			return d.unexpected(`',' or '}'`)
		}
	}
}

// list reads an array, calling elem for each element with the decoder at it.
func (d *decoder) list(elem func() error) error {
	if err := d.expect('['); err != nil {
		return err
	}
	if d.peek() == ']' {
		d.pos++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return nil
		default:
			return d.unexpected(`',' or ']'`)
		}
	}
}

// str reads a string. Raw bytes must be valid UTF-8 without control characters; \u escapes
// of lone surrogates become U+FFFD.
func (d *decoder) str() (string, error) {
	if err := d.expect('"'); err != nil {
		return "", err
	}
	start := d.pos
	// Fast path: no escapes.
	for i := start; i < len(d.data); i++ {
		c := d.data[i]
		if c == '"' {
			s := d.data[start:i]
			if !utf8.Valid(s) {
				return "", d.errorf("invalid UTF-8 in string")
			}
			d.pos = i + 1
			return string(s), nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
	}
	var sb []byte
	for {
		if d.pos >= len(d.data) {
			return "", d.errorf("unterminated string")
		}
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			if !utf8.Valid(sb) {
				return "", d.errorf("invalid UTF-8 in string")
			}
			return string(sb), nil
		case c < 0x20:
			return "", d.errorf("control character %q in string", c)
		case c != '\\':
			sb = append(sb, c)
			d.pos++
			continue
		}
		d.pos++
		if d.pos >= len(d.data) {
			return "", d.errorf("unterminated string")
		}
		e := d.data[d.pos]
		d.pos++
		switch e {
		case '"', '\\', '/':
			sb = append(sb, e)
		case 'b':
			sb = append(sb, '\b')
		case 'f':
			sb = append(sb, '\f')
		case 'n':
			sb = append(sb, '\n')
		case 'r':
			sb = append(sb, '\r')
		case 't':
			sb = append(sb, '\t')
		case 'u':
			r, err := d.hex4()
			if err != nil {
				return "", err
			}
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if d.pos+1 < len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
					save := d.pos
					d.pos += 2
					if low, err := d.hex4(); err == nil {
						r2 = utf16.DecodeRune(r, low)
					}
					if r2 == utf8.RuneError {
						d.pos = save // not a pair: read the next escape on its own
					}
				}
				r = r2
			}
			sb = utf8.AppendRune(sb, r)
		default:
			d.pos--
			return "", d.errorf("invalid escape \\%c in string", e)
		}
	}
}

func (d *decoder) hex4() (rune, error) {
	if d.pos+4 > len(d.data) {
		return 0, d.errorf("short \\u escape in string")
	}
	var r rune
	for _, c := range d.data[d.pos : d.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, d.errorf("invalid \\u escape in string")
		}
	}
	d.pos += 4
	return r, nil
}

// number scans a JSON number (or NaN, Infinity, -Infinity) and returns its text and whether
// it is written as an integer.
func (d *decoder) number() (tok []byte, isInt bool, err error) {
	d.ws()
	start := d.pos
	data := d.data
	word := func(w string) ([]byte, bool, error) {
		if !bytes.HasPrefix(data[d.pos:], []byte(w)) {
			return nil, false, d.unexpected("a number")
		}
		d.pos += len(w)
		return data[start:d.pos], false, nil
	}
	if d.pos < len(data) && data[d.pos] == 'N' {
		return word("NaN")
	}
	if d.pos < len(data) && data[d.pos] == '-' {
		d.pos++
	}
	if d.pos < len(data) && data[d.pos] == 'I' {
		return word("Infinity")
	}
	digits := func() int {
		n := 0
		for d.pos < len(data) && data[d.pos] >= '0' && data[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	switch {
	case d.pos < len(data) && data[d.pos] == '0':
		d.pos++
	case d.pos < len(data) && data[d.pos] >= '1' && data[d.pos] <= '9':
		digits()
	default:
		return nil, false, d.unexpected("a number")
	}
	isInt = true
	if d.pos < len(data) && data[d.pos] == '.' {
		d.pos++
		if digits() == 0 {
			return nil, false, d.unexpected("a digit")
		}
		isInt = false
	}
	if d.pos < len(data) && (data[d.pos] == 'e' || data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(data) && (data[d.pos] == '+' || data[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			return nil, false, d.unexpected("a digit")
		}
		isInt = false
	}
	return data[start:d.pos], isInt, nil
}

// float reads a number as a float32.
func (d *decoder) float() (v float32, isInt bool, err error) {
	at := d.pos
	tok, isInt, err := d.number()
	if err != nil {
		return 0, false, err
	}
	switch string(tok) {
	case "NaN":
		return float32(math.NaN()), false, nil
	case "Infinity":
		return float32(math.Inf(1)), false, nil
	case "-Infinity":
		return float32(math.Inf(-1)), false, nil
	}
	f, err := strconv.ParseFloat(string(tok), 32)
	if err != nil {
		d.pos = at
		d.ws()
		return 0, false, d.errorf("number %s is out of the float32 range", tok)
	}
	return float32(f), isInt, nil
}

// int reads an integer in [lo, hi].
func (d *decoder) int(lo, hi int64) (int64, error) {
	d.ws()
	at := d.pos
	tok, isInt, err := d.number()
	if err != nil {
		return 0, err
	}
	if !isInt {
		d.pos = at
		return 0, d.errorf("%s is not an integer", tok)
	}
	v, err := strconv.ParseInt(string(tok), 10, 64)
	if err != nil || v < lo || v > hi {
		d.pos = at
		return 0, d.errorf("integer %s is out of range [%d, %d]", tok, lo, hi)
	}
	return v, nil
}

func (d *decoder) bool() (bool, error) {
	rest := d.data[d.pos:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		d.pos += 4
		return true, nil
	case len(rest) >= 5 && string(rest[:5]) == "false":
		d.pos += 5
		return false, nil
	}
	return false, d.unexpected("true or false")
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
	switch kind {
	case kindFloats:
		err := d.list(func() error {
			v, _, err := d.float()
			c.f = append(c.f, v)
			return err
		})
		c.rows = len(c.f)
		return c, err
	case kindBools:
		err := d.list(func() error {
			d.ws()
			v, err := d.bool()
			c.b = append(c.b, v)
			return err
		})
		c.rows = len(c.b)
		return c, err
	case kindInt64s, kindInt32s:
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		if kind == kindInt32s {
			lo, hi = math.MinInt32, math.MaxInt32
		}
		err := d.list(func() error {
			v, err := d.int(lo, hi)
			c.i = append(c.i, v)
			return err
		})
		c.rows = len(c.i)
		return c, err
	}
	// Rows, or for actions rows or a flat list. Actions are integers while every value is.
	c.ints = kind == kindActions
	flat := false
	err := d.list(func() error {
		if kind == kindActions && c.rows == 0 && d.peek() != '[' {
			flat = true
		}
		if flat {
			if d.peek() == '[' {
				return d.errorf("row %d is a list in a flat list of actions", c.rows)
			}
			v, isInt, err := d.float()
			if err != nil {
				return err
			}
			if c.ints && !intCompatible(v, isInt) {
				c.ints = false
			}
			c.f = append(c.f, v)
			c.rows++
			return nil
		}
		before := len(c.f)
		at := d.pos
		err := d.list(func() error {
			v, isInt, err := d.float()
			if err != nil {
				return err
			}
			if c.ints && !intCompatible(v, isInt) {
				c.ints = false
			}
			c.f = append(c.f, v)
			return nil
		})
		if err != nil {
			return err
		}
		w := len(c.f) - before
		if c.rows == 0 {
			c.width = w
		} else if w != c.width {
			d.pos = at
			d.ws()
			return d.errorf("row %d has %d values, want %d (the length of row 0)", c.rows, w, c.width)
		}
		c.rows++
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}
