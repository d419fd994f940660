package wire

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/onnxrl/sampler/spaces"
)

// MaxDepth is the deepest nesting of arrays and objects a Decoder accepts.
const MaxDepth = 64

// SyntaxError reports a body that is not JSON, or JSON of the wrong shape (a string where a
// number is expected, a missing member).
type SyntaxError struct {
	Offset int // byte offset in the body
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("wire: %s at byte %d", e.Msg, e.Offset) }

// Decoder reads one JSON document from a byte slice without building a tree: the caller walks
// it with Object, Array and the scalar readers. It is meant to be reused (Reset) from a
// sync.Pool; strings returned by String alias its scratch buffer and stay valid until its next
// call.
type Decoder struct {
	data    []byte
	pos     int
	scratch []byte
}

// NewDecoder returns a decoder of data.
func NewDecoder(data []byte) *Decoder {
	d := &Decoder{}
	d.Reset(data)
	return d
}

// Reset starts decoding data, keeping the scratch buffers.
func (d *Decoder) Reset(data []byte) {
	d.data, d.pos = data, 0
}

// Offset returns the current byte offset.
func (d *Decoder) Offset() int { return d.pos }

func (d *Decoder) errorf(format string, args ...any) error {
	return &SyntaxError{Offset: d.pos, Msg: fmt.Sprintf(format, args...)}
}

func (d *Decoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (d *Decoder) peek() byte {
	d.ws()
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

func (d *Decoder) unexpected(want string) error {
	if d.pos >= len(d.data) {
		return d.errorf("unexpected end of the body, want %s", want)
	}
	c := d.data[d.pos]
	if c >= 0x20 && c < 0x7f {
		return d.errorf("unexpected %q, want %s", c, want)
	}
	return d.errorf("unexpected byte 0x%02x, want %s", c, want)
}

// End checks that only white space follows.
func (d *Decoder) End() error {
	d.ws()
	if d.pos != len(d.data) {
		return d.unexpected("the end of the body")
	}
	return nil
}

// Empty reports whether nothing but white space is left.
func (d *Decoder) Empty() bool {
	d.ws()
	return d.pos == len(d.data)
}

// Null consumes a null and reports whether there was one.
func (d *Decoder) Null() bool {
	d.ws()
	if bytes.HasPrefix(d.data[d.pos:], []byte("null")) {
		d.pos += 4
		return true
	}
	return false
}

// Object reads an object, calling member for each key; member must read the value (or Skip
// it). The key aliases the decoder's buffers and is valid until member returns.
func (d *Decoder) Object(member func(key []byte) error) error {
	return d.object(0, member)
}

func (d *Decoder) object(depth int, member func(key []byte) error) error {
	if depth > MaxDepth {
		return d.errorf("nested deeper than %d", MaxDepth)
	}
	if d.peek() != '{' {
		return d.unexpected("an object")
	}
	d.pos++
	if d.peek() == '}' {
		d.pos++
		return nil
	}
	for {
		if d.peek() != '"' {
			return d.unexpected("a string key")
		}
		key, err := d.str()
		if err != nil {
			return err
		}
		if d.peek() != ':' {
			return d.unexpected("':'")
		}
		d.pos++
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
			return d.unexpected("',' or '}'")
		}
	}
}

// Array reads an array, calling elem for each element with its index; elem must read the
// value.
func (d *Decoder) Array(elem func(i int) error) error {
	if d.peek() != '[' {
		return d.unexpected("an array")
	}
	d.pos++
	if d.peek() == ']' {
		d.pos++
		return nil
	}
	for i := 0; ; i++ {
		if err := elem(i); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return nil
		default:
			return d.unexpected("',' or ']'")
		}
	}
}

// String reads a string. The result aliases the data or the decoder's scratch buffer and is
// valid until the next call.
func (d *Decoder) String() ([]byte, error) {
	if d.peek() != '"' {
		return nil, d.unexpected("a string")
	}
	return d.str()
}

// str reads the string at d.pos (a '"').
func (d *Decoder) str() ([]byte, error) {
	d.pos++
	start := d.pos
	data := d.data
	// Fast path: no escapes.
	for i := start; i < len(data); i++ {
		c := data[i]
		if c == '"' {
			if !utf8.Valid(data[start:i]) {
				return nil, d.errorf("invalid UTF-8 in string")
			}
			d.pos = i + 1
			return data[start:i], nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			d.pos = i
			return nil, d.errorf("control character in string")
		}
	}
	out := d.scratch[:0]
	i := start
	for {
		if i >= len(data) {
			d.pos = i
			return nil, d.errorf("unterminated string")
		}
		c := data[i]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				d.pos = start
				return nil, d.errorf("invalid UTF-8 in string")
			}
			d.pos = i + 1
			d.scratch = out
			return out, nil
		case c < 0x20:
			d.pos = i
			return nil, d.errorf("control character in string")
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		i++
		if i >= len(data) {
			d.pos = i
			return nil, d.errorf("unterminated string")
		}
		e := data[i]
		i++
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(data, i)
			if !ok {
				d.pos = i
				return nil, d.errorf("invalid \\u escape in string")
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if i+6 <= len(data) && data[i] == '\\' && data[i+1] == 'u' {
					r2, ok = hex4(data, i+2)
				}
				if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			d.pos = i - 1
			return nil, d.errorf("invalid escape \\%c in string", e)
		}
	}
}

func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// Bool reads true or false.
func (d *Decoder) Bool() (bool, error) {
	d.ws()
	rest := d.data[d.pos:]
	switch {
	case bytes.HasPrefix(rest, []byte("true")):
		d.pos += 4
		return true, nil
	case bytes.HasPrefix(rest, []byte("false")):
		d.pos += 5
		return false, nil
	}
	return false, d.unexpected("true or false")
}

// number scans a JSON number, or NaN, Infinity or -Infinity (Python's json module writes
// them), and returns its text.
func (d *Decoder) number() ([]byte, error) {
	d.ws()
	data := d.data
	start := d.pos
	i := start
	if i < len(data) && data[i] == '-' {
		i++
	}
	if i < len(data) && (data[i] == 'N' || data[i] == 'I') {
		for _, w := range [...]string{"NaN", "Infinity"} {
			if bytes.HasPrefix(data[i:], []byte(w)) && (w == "Infinity" || i == start) {
				d.pos = i + len(w)
				return data[start:d.pos], nil
			}
		}
		d.pos = i
		return nil, d.unexpected("a number")
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	default:
		d.pos = i
		return nil, d.unexpected("a number")
	}
	if i < len(data) && data[i] == '.' {
		i++
		j := i
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		if i == j {
			d.pos = i
			return nil, d.unexpected("a digit")
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := i
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		if i == j {
			d.pos = i
			return nil, d.unexpected("a digit")
		}
	}
	d.pos = i
	return data[start:i], nil
}

// special returns the value of NaN, Infinity and -Infinity tokens.
func special(tok []byte) (float64, bool) {
	switch string(tok) {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	return 0, false
}

// Float64 reads a number (NaN, Infinity and -Infinity included).
func (d *Decoder) Float64() (float64, error) {
	at := d.pos
	tok, err := d.number()
	if err != nil {
		return 0, err
	}
	if v, ok := special(tok); ok {
		return v, nil
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil && math.IsInf(v, 0) {
		d.pos = at
		d.ws()
		return 0, d.errorf("number %s is out of the float64 range", tok)
	}
	return v, nil
}

// Float32 reads a number as a float32 (correctly rounded). A finite number beyond the float32
// range is an error.
func (d *Decoder) Float32() (float32, error) {
	at := d.pos
	tok, err := d.number()
	if err != nil {
		return 0, err
	}
	return d.float32(at, tok)
}

func (d *Decoder) float32(at int, tok []byte) (float32, error) {
	if v, ok := special(tok); ok {
		return float32(v), nil
	}
	// string(tok) does not escape (strconv copies it into its errors), so a short number
	// does not allocate.
	v, err := strconv.ParseFloat(string(tok), 32)
	if err != nil && math.IsInf(v, 0) {
		d.pos = at
		d.ws()
		return 0, d.errorf("number %s is out of the float32 range", tok)
	}
	return float32(v), nil
}

// Skip reads and drops any value.
func (d *Decoder) Skip() error {
	return d.skip(0)
}

func (d *Decoder) skip(depth int) error {
	if depth > MaxDepth {
		return d.errorf("nested deeper than %d", MaxDepth)
	}
	switch c := d.peek(); c {
	case '{':
		return d.object(depth+1, func([]byte) error { return d.skip(depth + 1) })
	case '[':
		d.pos++
		if d.peek() == ']' {
			d.pos++
			return nil
		}
		for {
			if err := d.skip(depth + 1); err != nil {
				return err
			}
			switch d.peek() {
			case ',':
				d.pos++
			case ']':
				d.pos++
				return nil
			default:
				return d.unexpected("',' or ']'")
			}
		}
	case '"':
		_, err := d.str()
		return err
	case 't', 'f':
		_, err := d.Bool()
		return err
	case 'n':
		if d.Null() {
			return nil
		}
		return d.unexpected("a value")
	default:
		_, err := d.number()
		return err
	}
}

// Raw reads any value and returns its text (aliasing the data).
func (d *Decoder) Raw() ([]byte, error) {
	d.ws()
	start := d.pos
	if err := d.Skip(); err != nil {
		return nil, err
	}
	return d.data[start:d.pos], nil
}

// Value reads a value of space s and appends its raw layout (see package spaces) to dst. It
// accepts the forms AppendValue writes (a number for a Discrete, arrays nested by a Box's
// shape, an array of children for a Tuple, an object for a Dict) and, for any space, the raw
// layout as a flat array: numbers (and true/false as 1/0) are appended in document order,
// arrays at any depth are flattened, and an object is read as a Dict whose members are
// reordered into the Dict's key order. s may be nil when no object is expected. Value
// checks only the syntax; the caller checks the length and membership (s.Contains).
func (d *Decoder) Value(dst []float32, s spaces.Space) ([]float32, error) {
	return d.value(dst, s, 0)
}

func (d *Decoder) value(dst []float32, s spaces.Space, depth int) ([]float32, error) {
	if depth > MaxDepth {
		return dst, d.errorf("nested deeper than %d", MaxDepth)
	}
	switch c := d.peek(); c {
	case '[':
		d.pos++
		if d.peek() == ']' {
			d.pos++
			return dst, nil
		}
		tuple, _ := s.(*spaces.Tuple)
		for i := 0; ; i++ {
			// The common case, a flat array of numbers, reads the numbers in this loop.
			c := d.peek()
			if c == '-' || (c >= '0' && c <= '9') {
				at := d.pos
				tok, err := d.number()
				if err != nil {
					return dst, err
				}
				v, err := d.float32(at, tok)
				if err != nil {
					return dst, err
				}
				dst = append(dst, v)
			} else {
				var child spaces.Space
				switch {
				case tuple != nil && i < len(tuple.Spaces):
					child = tuple.Spaces[i]
				case tuple == nil:
					if _, ok := s.(*spaces.Dict); !ok {
						child = s // the nested arrays of a Box
					}
				}
				var err error
				if dst, err = d.value(dst, child, depth+1); err != nil {
					return dst, err
				}
			}
			switch d.peek() {
			case ',':
				d.pos++
			case ']':
				d.pos++
				return dst, nil
			default:
				return dst, d.unexpected("',' or ']'")
			}
		}
	case '{':
		dict, ok := s.(*spaces.Dict)
		if !ok {
			what := "a number or an array"
			if s != nil {
				what = "a value of " + s.Type()
			}
			return dst, d.unexpected(what)
		}
		return d.dict(dst, dict, depth)
	case 't', 'f':
		b, err := d.Bool()
		if err != nil {
			return dst, err
		}
		if b {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	default:
		v, err := d.Float32()
		if err != nil {
			return dst, err
		}
		return append(dst, v), nil
	}
}

// dict reads an object of a Dict's members and appends their values in the Dict's key order.
// Dicts are rare in observations: this path allocates.
func (d *Decoder) dict(dst []float32, s *spaces.Dict, depth int) ([]float32, error) {
	n := len(s.Keys)
	type member struct{ off, end int }
	members := make([]member, n)
	seen := make([]bool, n)
	var seg []float32 // the members in document order
	err := d.object(depth+1, func(key []byte) error {
		k := -1
		for i, name := range s.Keys {
			if name == string(key) {
				k = i
				break
			}
		}
		if k < 0 {
			return d.errorf("unknown Dict key %q", key)
		}
		if seen[k] {
			return d.errorf("duplicate Dict key %q", key)
		}
		seen[k] = true
		off := len(seg)
		var err error
		seg, err = d.value(seg, s.Spaces[k], depth+1)
		members[k] = member{off, len(seg)}
		return err
	})
	if err != nil {
		return dst, err
	}
	for i, ok := range seen {
		if !ok {
			return dst, d.errorf("missing Dict key %q", s.Keys[i])
		}
	}
	for _, m := range members {
		dst = append(dst, seg[m.off:m.end]...)
	}
	return dst, nil
}
