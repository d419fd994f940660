// Package jsonscan reads JSON in place, without building a tree: the caller walks a document
// with Object, Array and the scalar readers, in the order the document holds them. It is the
// one JSON reader of the policy server's request decoder (externalenv/server/wire) and of the
// sample file reader (envrunner/output).
//
// A Scanner allocates nothing on its own: strings are returned as slices of the data (or of
// the scanner's scratch buffer when they hold escapes), numbers are parsed with strconv on
// the data's bytes. NaN, Infinity and -Infinity are read as numbers, as Python's json module
// writes them. Errors are *SyntaxError values with the byte offset.
package jsonscan

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects that Skip and the *Depth readers
// accept.
const MaxDepth = 64

// SyntaxError reports data that is not JSON, or JSON of the wrong shape (a string where a
// number is expected), at byte Offset of the data.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.Msg, e.Offset) }

// Scanner reads one JSON document from a byte slice. The zero Scanner reads an empty
// document; Reset starts another and keeps the scratch buffer, so a Scanner is meant to be
// reused.
type Scanner struct {
	data    []byte
	pos     int
	scratch []byte
	// Input names the data in errors ("unexpected end of <Input>"); "" means "the input".
	Input string
}

// Reset starts scanning data.
func (s *Scanner) Reset(data []byte) { s.data, s.pos = data, 0 }

// Offset returns the current byte offset.
func (s *Scanner) Offset() int { return s.pos }

// Advance moves past the byte Peek returned.
func (s *Scanner) Advance() { s.pos++ }

// Errorf returns a *SyntaxError at the current offset.
func (s *Scanner) Errorf(format string, args ...any) error {
	return &SyntaxError{Offset: s.pos, Msg: fmt.Sprintf(format, args...)}
}

// ErrorAt returns a *SyntaxError at offset at (after the white space there).
func (s *Scanner) ErrorAt(at int, format string, args ...any) error {
	s.pos = at
	s.ws()
	return s.Errorf(format, args...)
}

func (s *Scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// Peek skips white space and returns the next byte, or 0 at the end.
func (s *Scanner) Peek() byte {
	s.ws()
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

func (s *Scanner) input() string {
	if s.Input == "" {
		return "the input"
	}
	return s.Input
}

// Unexpected returns the error for the byte at the current offset when want was expected.
func (s *Scanner) Unexpected(want string) error {
	if s.pos >= len(s.data) {
		return s.Errorf("unexpected end of %s, want %s", s.input(), want)
	}
	c := s.data[s.pos]
	if c >= 0x20 && c < 0x7f {
		return s.Errorf("unexpected %q, want %s", c, want)
	}
	return s.Errorf("unexpected byte 0x%02x, want %s", c, want)
}

// End checks that only white space follows.
func (s *Scanner) End() error {
	s.ws()
	if s.pos != len(s.data) {
		return s.Unexpected("the end of " + s.input())
	}
	return nil
}

// Empty reports whether nothing but white space is left.
func (s *Scanner) Empty() bool {
	s.ws()
	return s.pos == len(s.data)
}

// Null consumes a null and reports whether there was one.
func (s *Scanner) Null() bool {
	s.ws()
	if bytes.HasPrefix(s.data[s.pos:], []byte("null")) {
		s.pos += 4
		return true
	}
	return false
}

// Object reads an object, calling member for each key with the scanner at the value, which
// member must read (or Skip). The key aliases the data or the scratch buffer and is valid
// until member reads a string. Duplicate keys are the caller's to find.
func (s *Scanner) Object(member func(key []byte) error) error {
	return s.ObjectDepth(0, member)
}

// ObjectDepth is Object for an object nested depth levels deep: deeper than MaxDepth is an
// error.
func (s *Scanner) ObjectDepth(depth int, member func(key []byte) error) error {
	if depth > MaxDepth {
		return s.Errorf("nested deeper than %d", MaxDepth)
	}
	if s.Peek() != '{' {
		return s.Unexpected("an object")
	}
	s.pos++
	if s.Peek() == '}' {
		s.pos++
		return nil
	}
	for {
		if s.Peek() != '"' {
			return s.Unexpected("a string key")
		}
		key, err := s.str()
		if err != nil {
			return err
		}
		if s.Peek() != ':' {
			return s.Unexpected("':'")
		}
		s.pos++
		if err := member(key); err != nil {
			return err
		}
		switch s.Peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.Unexpected("',' or '}'")
		}
	}
}

// Array reads an array, calling elem for each element with its index and the scanner at
// it; elem must read the element.
func (s *Scanner) Array(elem func(i int) error) error {
	if elems, err := s.ArrayStart(); !elems {
		return err
	}
	for i := 0; ; i++ {
		if err := elem(i); err != nil {
			return err
		}
		if more, err := s.ArrayNext(); !more {
			return err
		}
	}
}

// ArrayNext reads what follows an element of an array: a ',' (more is true: another element
// follows) or the closing ']'.
func (s *Scanner) ArrayNext() (more bool, err error) {
	switch s.Peek() {
	case ',':
		s.pos++
		return true, nil
	case ']':
		s.pos++
		return false, nil
	}
	return false, s.Unexpected("',' or ']'")
}

// ArrayStart reads the '[' of an array and reports whether an element follows (false: the
// array was empty and is read).
func (s *Scanner) ArrayStart() (elems bool, err error) {
	if s.Peek() != '[' {
		return false, s.Unexpected("an array")
	}
	s.pos++
	if s.Peek() == ']' {
		s.pos++
		return false, nil
	}
	return true, nil
}

// String reads a string. Raw bytes must be valid UTF-8 without control characters; \u
// escapes of lone surrogates become U+FFFD. The result aliases the data or the scratch
// buffer and is valid until the next string is read.
func (s *Scanner) String() ([]byte, error) {
	if s.Peek() != '"' {
		return nil, s.Unexpected("a string")
	}
	return s.str()
}

// str reads the string at s.pos (a '"').
func (s *Scanner) str() ([]byte, error) {
	s.pos++
	start := s.pos
	data := s.data
	for i := start; i < len(data); i++ { // fast path: no escapes
		c := data[i]
		if c == '"' {
			if !utf8.Valid(data[start:i]) {
				return nil, s.Errorf("invalid UTF-8 in string")
			}
			s.pos = i + 1
			return data[start:i], nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
	}
	return s.strEscaped(start)
}

// strEscaped reads the string whose contents start at data[start], decoding its escapes
// into the scratch buffer.
func (s *Scanner) strEscaped(start int) ([]byte, error) {
	data := s.data
	out := s.scratch[:0]
	i := start
	for {
		if i >= len(data) {
			s.pos = i
			return nil, s.Errorf("unterminated string")
		}
		c := data[i]
		switch {
		case c == '"':
			s.scratch = out
			if !utf8.Valid(out) {
				s.pos = start
				return nil, s.Errorf("invalid UTF-8 in string")
			}
			s.pos = i + 1
			return out, nil
		case c < 0x20:
			s.pos = i
			return nil, s.Errorf("control character %q in string", c)
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		var err error
		if out, i, err = s.escape(out, i+1); err != nil {
			return nil, err
		}
	}
}

// escapeBytes are the values of the one-character escapes.
var escapeBytes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// escape decodes the escape whose letter is at data[i] (after its backslash), appending the
// character to out; it returns out and the index after the escape.
func (s *Scanner) escape(out []byte, i int) ([]byte, int, error) {
	data := s.data
	if i >= len(data) {
		s.pos = i
		return nil, i, s.Errorf("unterminated string")
	}
	e := data[i]
	i++
	if b := escapeBytes[e]; b != 0 {
		return append(out, b), i, nil
	}
	if e != 'u' {
		s.pos = i - 1
		return nil, i, s.Errorf("invalid escape \\%c in string", e)
	}
	r, ok := hex4(data, i)
	switch {
	case i+4 > len(data):
		s.pos = i
		return nil, i, s.Errorf("short \\u escape in string")
	case !ok:
		s.pos = i
		return nil, i, s.Errorf("invalid \\u escape in string")
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
			r = utf8.RuneError // not a pair: the next escape is read on its own
		}
	}
	return utf8.AppendRune(out, r), i, nil
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
func (s *Scanner) Bool() (bool, error) {
	s.ws()
	rest := s.data[s.pos:]
	switch {
	case bytes.HasPrefix(rest, []byte("true")):
		s.pos += 4
		return true, nil
	case bytes.HasPrefix(rest, []byte("false")):
		s.pos += 5
		return false, nil
	}
	return false, s.Unexpected("true or false")
}

// Number scans a JSON number, or NaN, Infinity or -Infinity, and returns its text (aliasing
// the data) and whether it is written as an integer (no point, no exponent; the special
// values are not).
func (s *Scanner) Number() (tok []byte, isInt bool, err error) {
	s.ws()
	data := s.data
	start := s.pos
	i := start
	if i < len(data) && data[i] == '-' {
		i++
	}
	if i < len(data) && (data[i] == 'N' || data[i] == 'I') {
		return s.specialNumber(start, i)
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		i = skipDigits(data, i)
	default:
		s.pos = i
		return nil, false, s.Unexpected("a number")
	}
	isInt = true
	// A fraction and an exponent each need one digit at least.
	if i < len(data) && data[i] == '.' {
		if i = skipDigits(data, i+1); data[i-1] == '.' {
			s.pos = i
			return nil, false, s.Unexpected("a digit")
		}
		isInt = false
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := i
		if i = skipDigits(data, i); i == j {
			s.pos = i
			return nil, false, s.Unexpected("a digit")
		}
		isInt = false
	}
	s.pos = i
	return data[start:i], isInt, nil
}

// specialNumber scans NaN, Infinity or -Infinity, whose letters start at data[i] (start is
// the token's first byte: its '-', if any).
func (s *Scanner) specialNumber(start, i int) ([]byte, bool, error) {
	for _, w := range [...]string{"NaN", "Infinity"} {
		if bytes.HasPrefix(s.data[i:], []byte(w)) && (w == "Infinity" || i == start) {
			s.pos = i + len(w)
			return s.data[start:s.pos], false, nil
		}
	}
	s.pos = i
	return nil, false, s.Unexpected("a number")
}

// skipDigits returns the index of the first byte from data[i] on that is not a decimal digit.
func skipDigits(data []byte, i int) int {
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		i++
	}
	return i
}

// special returns the value of the NaN, Infinity and -Infinity tokens.
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

// Float64 reads a number (NaN, Infinity and -Infinity included). A finite number beyond the
// float64 range is an error.
func (s *Scanner) Float64() (float64, error) {
	at := s.pos
	tok, _, err := s.Number()
	if err != nil {
		return 0, err
	}
	if v, ok := special(tok); ok {
		return v, nil
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil && math.IsInf(v, 0) {
		return 0, s.ErrorAt(at, "number %s is out of the float64 range", tok)
	}
	return v, nil
}

// Float32 reads a number as a float32 (correctly rounded). A finite number beyond the
// float32 range is an error.
func (s *Scanner) Float32() (float32, error) {
	v, _, err := s.Float32Int()
	return v, err
}

// Float32Int is Float32 that also reports whether the number is written as an integer (see
// Number).
func (s *Scanner) Float32Int() (v float32, isInt bool, err error) {
	at := s.pos
	tok, isInt, err := s.Number()
	if err != nil {
		return 0, false, err
	}
	if v, ok := special(tok); ok {
		return float32(v), false, nil
	}
	// string(tok) does not escape (strconv copies it into its errors), so a short number
	// does not allocate.
	f, err := strconv.ParseFloat(string(tok), 32)
	if err != nil && math.IsInf(f, 0) {
		return 0, false, s.ErrorAt(at, "number %s is out of the float32 range", tok)
	}
	return float32(f), isInt, nil
}

// Int reads an integer (written without point or exponent) in [lo, hi].
func (s *Scanner) Int(lo, hi int64) (int64, error) {
	s.ws()
	at := s.pos
	tok, isInt, err := s.Number()
	if err != nil {
		return 0, err
	}
	if !isInt {
		return 0, s.ErrorAt(at, "%s is not an integer", tok)
	}
	v, err := strconv.ParseInt(string(tok), 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, s.ErrorAt(at, "integer %s is out of range [%d, %d]", tok, lo, hi)
	}
	return v, nil
}

// Skip reads and drops any value.
func (s *Scanner) Skip() error { return s.SkipDepth(0) }

// SkipDepth is Skip for a value nested depth levels deep.
func (s *Scanner) SkipDepth(depth int) error {
	if depth > MaxDepth {
		return s.Errorf("nested deeper than %d", MaxDepth)
	}
	switch c := s.Peek(); c {
	case '{':
		return s.ObjectDepth(depth+1, func([]byte) error { return s.SkipDepth(depth + 1) })
	case '[':
		elems, err := s.ArrayStart()
		for elems && err == nil {
			if err = s.SkipDepth(depth + 1); err == nil {
				elems, err = s.ArrayNext()
			}
		}
		return err
	case '"':
		_, err := s.str()
		return err
	case 't', 'f':
		_, err := s.Bool()
		return err
	case 'n':
		if s.Null() {
			return nil
		}
		return s.Unexpected("a value")
	default:
		_, _, err := s.Number()
		return err
	}
}

// Raw reads any value and returns its text (aliasing the data).
func (s *Scanner) Raw() ([]byte, error) {
	s.ws()
	start := s.pos
	if err := s.Skip(); err != nil {
		return nil, err
	}
	return s.data[start:s.pos], nil
}
