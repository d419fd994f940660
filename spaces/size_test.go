package spaces

import (
	"math"
	"testing"
)

func TestCheckedSize(t *testing.T) {
	for _, c := range []struct {
		shape []int
		want  int
		ok    bool
	}{
		{nil, 1, true},
		{[]int{3, 4}, 12, true},
		{[]int{0, math.MaxInt}, 0, true},
		{[]int{MaxElements}, MaxElements, true},
		{[]int{MaxElements + 1}, 0, false},
		{[]int{math.MaxInt}, 0, false},
		{[]int{1 << 32, 1 << 32}, 0, false}, // wraps to 0 without the check
		{[]int{4, -1}, 0, false},
	} {
		n, err := CheckedSize(c.shape...)
		if (err == nil) != c.ok || n != c.want {
			t.Errorf("CheckedSize(%v) = %d, %v; want %d, ok %v", c.shape, n, err, c.want, c.ok)
		}
	}
}
