package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// parseInferInput reads {"inputs": {"<name>": {"shape": [...], "data": [...]}}} token by
// token, counting each data array against limits (nil: inference.MaxTensorElements for
// every input).
func parseInferInput(path string, raw []byte, limits map[string]int64) (*inferInput, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	bad := func(err error) error {
		var le *limitError
		if errors.As(err, &le) {
			return fmt.Errorf("input %s: %v", path, err)
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
					// The array is scanned by encoding/json (fast, no value per element),
					// then its numbers are parsed up to the limit.
					var raw json.RawMessage
					if err := dec.Decode(&raw); err != nil {
						return err
					}
					var err error
					t.Data, err = parseNumbers(t.Data[:0], raw, name, limit)
					return err
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

// parseNumbers appends the numbers of the JSON array raw (valid JSON) to dst, failing at the
// first value beyond limit.
func parseNumbers(dst []jsonFloat, raw []byte, name string, limit int64) ([]jsonFloat, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' {
		return dst, fmt.Errorf("%q: data is not an array", name)
	}
	body := bytes.TrimSpace(raw[1 : len(raw)-1])
	for len(body) > 0 {
		if int64(len(dst)) >= limit {
			return dst, &limitError{name: name, limit: limit}
		}
		tok := body
		if i := bytes.IndexByte(body, ','); i >= 0 {
			tok, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		var f jsonFloat
		if err := f.UnmarshalJSON(bytes.TrimSpace(tok)); err != nil {
			return dst, err
		}
		dst = append(dst, f)
	}
	return dst, nil
}
