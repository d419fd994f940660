package inference

import (
	"fmt"
	"math"
)

// MaxTensorElements bounds the elements of one tensor the session allocates (at its batch
// capacity): 2^28, 1 GiB of float32. A model is untrusted input: a static input of shape
// [2^40, 4] must be a clear error, not a process killed for memory.
const MaxTensorElements = 1 << 28

// LimitError reports a tensor larger than MaxTensorElements (or whose size overflows).
type LimitError struct {
	Name  string
	Shape []int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("inference: tensor %q of shape %v has more than %d elements (MaxTensorElements)", e.Name, e.Shape, MaxTensorElements)
}

// tensorElems returns the number of elements of shape with the batch axis (if any, and
// batch > 0) set to batch, checked against overflow and MaxTensorElements.
func tensorElems(name string, shape []int64, batchAxis int, batch int) (int, error) {
	n := int64(1)
	full := shape
	for i, d := range shape {
		if i == batchAxis && batch > 0 {
			d = int64(batch)
		}
		if d < 0 {
			return 0, fmt.Errorf("inference: tensor %q of shape %v: dimension %d is unknown", name, shape, i)
		}
		if d != 0 && n > math.MaxInt64/d {
			return 0, &LimitError{Name: name, Shape: full}
		}
		n *= d
	}
	if n > MaxTensorElements {
		return 0, &LimitError{Name: name, Shape: full}
	}
	return int(n), nil
}
