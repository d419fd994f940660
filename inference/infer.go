package inference

import (
	"fmt"
	"slices"
)

// Data is a tensor's shape and flat row-major values, for tools and tests (the CLI's `infer`
// reads and writes this form). Values are float64 whatever the element type.
type Data struct {
	Shape  []int64   `json:"shape"`
	Values []float64 `json:"data"`
}

// Infer checks inputs against the model (every input given, no unknown name, shapes that
// match with one batch size, values that fit the element types), runs the model and returns
// every output. It allocates; the hot path uses SetBatch, the tensors' views and Run.
func (s *Session) Infer(inputs map[string]Data) (map[string]Data, error) {
	if s.closed {
		return nil, ErrClosed
	}
	for name := range inputs {
		if _, err := s.Input(name); err != nil {
			return nil, err
		}
	}
	batch := 0
	for i, t := range s.inputs {
		d, ok := inputs[t.Info.Name]
		if !ok {
			return nil, fmt.Errorf("inference: input %q (%s%s) is missing", t.Info.Name, t.Info.ElemType, t.Info.ShapeString())
		}
		n, err := s.batchOf(t, s.inBase[i], d.Shape)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			continue
		}
		if batch != 0 && n != batch {
			return nil, &ShapeMismatchError{Input: t.Info.Name, Want: fmt.Sprintf("%s with batch %d like the other inputs", t.Info.ShapeString(), batch), Got: d.Shape}
		}
		batch = n
	}
	if batch == 0 {
		batch = 1
	}
	if err := s.SetBatch(batch); err != nil {
		return nil, err
	}
	for _, t := range s.inputs {
		d := inputs[t.Info.Name]
		if len(d.Values) != t.Len() {
			return nil, fmt.Errorf("inference: input %q: %d values for shape %v (%d elements)", t.Info.Name, len(d.Values), formatShape(d.Shape), t.Len())
		}
		if err := t.SetValues(d.Values); err != nil {
			return nil, err
		}
	}
	if err := s.Run(); err != nil {
		return nil, err
	}
	out := make(map[string]Data, len(s.outputs))
	for _, t := range s.outputs {
		out[t.Info.Name] = Data{Shape: slices.Clone(t.Shape()), Values: t.Values()}
	}
	return out, nil
}

// batchOf checks shape against the tensor's expected shape and returns the batch size it
// implies (0 for a tensor without a batch axis).
func (s *Session) batchOf(t *Tensor, base, shape []int64) (int, error) {
	bad := &ShapeMismatchError{Input: t.Info.Name, Want: t.Info.ShapeString(), Got: shape}
	if len(shape) != len(base) {
		return 0, bad
	}
	n := 0
	for i, d := range shape {
		if i == t.BatchAxis {
			if d < 1 || d > int64(s.capacity) {
				return 0, bad
			}
			n = int(d)
			continue
		}
		if d != base[i] {
			return 0, bad
		}
	}
	return n, nil
}
