package spaces

import "fmt"

// CheckedSize returns the number of elements of a shape: the product of its dimensions,
// checked before it can overflow. A negative dimension or a product above MaxElements is an
// error (a model's shape is untrusted input: [2^63-1] must not reach make).
func CheckedSize(shape ...int) (int, error) {
	n := 1
	for i, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("spaces: dimension %d of shape %v is negative", i, shape)
		}
		if d != 0 && n > MaxElements/d {
			return 0, fmt.Errorf("spaces: shape %v has more than %d elements", shape, MaxElements)
		}
		n *= d
	}
	if n > MaxElements {
		return 0, fmt.Errorf("spaces: shape %v has more than %d elements", shape, MaxElements)
	}
	return n, nil
}
