package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"

	"github.com/onnxrl/sampler/inference"
)

// inferMaxBatch is the largest batch `sample infer` runs.
const inferMaxBatch = 1 << 20

// inputLimits returns, per input of the model, the most values its data may hold: the
// values of one batch row times inferMaxBatch (a row of unknown size, or a total above it:
// inference.MaxTensorElements). parseInferInput stops at the first array beyond its limit,
// instead of reading 10^8 values (37.6 s, 4.15 GB) to report a shape error.
func inputLimits(m *inference.Model) map[string]int64 {
	limits := make(map[string]int64, len(m.Inputs))
	for _, in := range m.Inputs {
		batch, row, known := -1, int64(1), true
		for i, d := range in.Shape {
			switch {
			case d < 0 && batch < 0:
				batch = i
			case d < 0:
				known = false
			case row <= inference.MaxTensorElements:
				row *= min(d, inference.MaxTensorElements+1)
			}
		}
		limit := int64(inference.MaxTensorElements)
		switch {
		case !known:
		case batch < 0:
			limit = min(limit, row) // a fixed shape
		case row <= inference.MaxTensorElements/inferMaxBatch:
			limit = row * inferMaxBatch
		}
		limits[in.Name] = limit
	}
	return limits
}

// parseInferInput reads {"inputs": {"<name>": {"shape": [...], "data": [...]}}} from r token
// by token, counting each data array against limits (nil: inference.MaxTensorElements for
// every input) and the bytes against maxInputFile as it reads: it stops at the first value or
// byte over a limit. (It read the whole input, then each data array whole, before counting:
// a 200 MB input took 5-23 s and 1.0 GB to be refused; issue 35.)
func parseInferInput(path string, r io.Reader, limits map[string]int64) (*inferInput, error) {
	dec := json.NewDecoder(&boundedReader{r: r, left: maxInputFile + 1})
	bad := func(err error) error {
		var le *limitError
		switch {
		case errors.As(err, &le):
			return fmt.Errorf("input %s: %v", path, err)
		case errors.Is(err, errInputTooLarge):
			return fmt.Errorf("input %s: %w", path, err)
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return fmt.Errorf("input %s: %w", path, pe.Err)
		}
		return fmt.Errorf("input %s: invalid JSON: %v", path, err)
	}
	in := &inferInput{Inputs: map[string]tensorJSON{}}
	err := object(dec, func(key string) error {
		if key != "inputs" {
			return fmt.Errorf("json: unknown field %q", key)
		}
		return object(dec, func(name string) error {
			limit, ok := limits[name]
			if !ok {
				limit = inference.MaxTensorElements
			}
			var t tensorJSON
			err := object(dec, func(field string) error {
				switch field {
				case "shape":
					t.Shape = t.Shape[:0]
					return array(dec, func() error {
						v, err := number(dec)
						if err != nil {
							return err
						}
						if f := float64(v); f != math.Trunc(f) || math.Abs(f) > 1<<53 {
							return fmt.Errorf("dimension %v is not an integer", float64(v))
						}
						t.Shape = append(t.Shape, int64(v))
						return nil
					})
				case "data":
					t.Data = t.Data[:0]
					return array(dec, func() error {
						if int64(len(t.Data)) >= limit {
							return &limitError{name: name, limit: limit}
						}
						v, err := number(dec)
						t.Data = append(t.Data, v)
						return err
					})
				}
				return fmt.Errorf("json: unknown field %q", field)
			})
			in.Inputs[name] = t
			return err
		})
	})
	if err != nil {
		return nil, bad(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("input %s: invalid JSON: data after the top-level object", path)
	}
	return in, nil
}

type limitError struct {
	name  string
	limit int64
}

func (e *limitError) Error() string {
	return fmt.Sprintf("%q: more than %d values, the most the model's input takes (at batch %d)", e.name, e.limit, inferMaxBatch)
}

// object reads a JSON object, calling member for each key with the decoder before its value.
func object(dec *json.Decoder, member func(key string) error) error {
	if err := delim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if err := member(key); err != nil {
			return err
		}
	}
	return delim(dec, '}')
}

// array reads a JSON array, calling elem for each element.
func array(dec *json.Decoder, elem func() error) error {
	if err := delim(dec, '['); err != nil {
		return err
	}
	for dec.More() {
		if err := elem(); err != nil {
			return err
		}
	}
	return delim(dec, ']')
}

func delim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, got %v", want, tok)
	}
	return nil
}

// number reads a number, or one of the strings "nan", "inf", "-inf" (see jsonFloat).
func number(dec *json.Decoder) (jsonFloat, error) {
	tok, err := dec.Token()
	if err != nil {
		return 0, err
	}
	switch v := tok.(type) {
	case float64:
		return jsonFloat(v), nil
	case string:
		var f jsonFloat
		b, _ := json.Marshal(v)
		return f, f.UnmarshalJSON(b)
	}
	return 0, fmt.Errorf("%v is not a number", tok)
}

// errInputTooLarge is the error for an input of more than maxInputFile bytes.
var errInputTooLarge = fmt.Errorf("larger than %d bytes", maxInputFile)

// boundedReader reads r until left bytes were read, then fails with errInputTooLarge.
type boundedReader struct {
	r    io.Reader
	left int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errInputTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}
