package wire

import (
	"github.com/onnxrl/sampler/internal/jsonscan"
	"github.com/onnxrl/sampler/spaces"
)

// MaxDepth is the deepest nesting of arrays and objects a Decoder accepts.
const MaxDepth = jsonscan.MaxDepth

// SyntaxError reports a body that is not JSON, or JSON of the wrong shape (a string where a
// number is expected, a missing member), at byte Offset of the body.
type SyntaxError = jsonscan.SyntaxError

// Decoder reads one JSON document from a byte slice without building a tree: the caller walks
// it with Object, Array and the scalar readers of the shared scanner (package
// internal/jsonscan), and reads values of a space with Value. It is meant to be reused
// (Reset) from a sync.Pool; strings returned by String alias its scratch buffer and stay
// valid until its next string.
type Decoder struct {
	jsonscan.Scanner
}

// NewDecoder returns a decoder of data.
func NewDecoder(data []byte) *Decoder {
	d := &Decoder{}
	d.Reset(data)
	return d
}

// Reset starts decoding data, keeping the scratch buffers.
func (d *Decoder) Reset(data []byte) {
	d.Scanner.Reset(data)
	d.Input = "the body"
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
		return dst, d.Errorf("nested deeper than %d", MaxDepth)
	}
	switch c := d.Peek(); c {
	case '[':
		elems, err := d.ArrayStart()
		if !elems {
			return dst, err
		}
		tuple, _ := s.(*spaces.Tuple)
		for i := 0; ; i++ {
			// The common case, a flat array of numbers, reads the numbers in this loop.
			c := d.Peek()
			if c == '-' || (c >= '0' && c <= '9') {
				v, err := d.Float32()
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
			switch d.Peek() { // ArrayNext, written out: it does not inline
			case ',':
				d.Advance()
			case ']':
				d.Advance()
				return dst, nil
			default:
				return dst, d.Unexpected("',' or ']'")
			}
		}
	case '{':
		dict, ok := s.(*spaces.Dict)
		if !ok {
			what := "a number or an array"
			if s != nil {
				what = "a value of " + s.Type()
			}
			return dst, d.Unexpected(what)
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
	err := d.ObjectDepth(depth+1, func(key []byte) error {
		k := -1
		for i, name := range s.Keys {
			if name == string(key) {
				k = i
				break
			}
		}
		if k < 0 {
			return d.Errorf("unknown Dict key %q", key)
		}
		if seen[k] {
			return d.Errorf("duplicate Dict key %q", key)
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
			return dst, d.Errorf("missing Dict key %q", s.Keys[i])
		}
	}
	for _, m := range members {
		dst = append(dst, seg[m.off:m.end]...)
	}
	return dst, nil
}
