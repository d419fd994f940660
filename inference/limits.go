package inference

import (
	"fmt"
	"math"
	"slices"
)

// MaxTensorElements bounds the elements of one tensor the session allocates (at its batch
// capacity): 2^28, 1 GiB of float32. A model is untrusted input: a static input of shape
// [2^40, 4] must be a clear error, not a process killed for memory.
const MaxTensorElements = 1 << 28

// LimitError reports a tensor larger than MaxTensorElements (or whose size overflows).
type LimitError struct {
	Name  string
	Shape []int64 // the shape the session would allocate: the batch axis at the batch size
	// BatchAxis is the dimension set to the session's batch capacity, or -1.
	BatchAxis int
}

func (e *LimitError) Error() string {
	at := ""
	if e.BatchAxis >= 0 && e.BatchAxis < len(e.Shape) {
		at = fmt.Sprintf(" (dimension %d is the batch size, %d)", e.BatchAxis, e.Shape[e.BatchAxis])
	}
	return fmt.Sprintf("inference: tensor %q of shape %v%s has more than %d elements, the most one tensor may hold (1 GiB of float32)",
		e.Name, e.Shape, at, MaxTensorElements)
}

// tensorElems returns the number of elements of shape with the batch axis (if any, and
// batch > 0) set to batch, checked against overflow and MaxTensorElements. The error names the
// shape so set (a static [65536, 8192] was reported as [1 8192]: issue 35).
func tensorElems(name string, shape []int64, batchAxis int, batch int) (int, error) {
	n := int64(1)
	for i, d := range shape {
		if i == batchAxis && batch > 0 {
			d = int64(batch)
		}
		if d < 0 {
			return 0, fmt.Errorf("inference: tensor %q of shape %v: dimension %d is unknown", name, shape, i)
		}
		if d != 0 && n > math.MaxInt64/d {
			return 0, limitError(name, shape, batchAxis, batch)
		}
		n *= d
	}
	if n > MaxTensorElements {
		return 0, limitError(name, shape, batchAxis, batch)
	}
	return int(n), nil
}

func limitError(name string, shape []int64, batchAxis, batch int) *LimitError {
	full := slices.Clone(shape)
	if batchAxis < 0 || batchAxis >= len(full) || batch <= 0 {
		batchAxis = -1
	} else {
		full[batchAxis] = int64(batch)
	}
	return &LimitError{Name: name, Shape: full, BatchAxis: batchAxis}
}
