package inference

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/internal/onnxtest"
)

// The reproduction: a static input of shape [2^40, 4] (a fixed batch of 2^40) died
// out of memory in tensor allocation. NewSession now returns a *LimitError first.
func TestSessionTensorLimit(t *testing.T) {
	needRuntime(t)
	for _, dims := range [][]int64{{1 << 40, 4}, {-1, 1 << 30}, {-1, math.MaxInt64, 4}} {
		data := onnxtest.Model{
			Inputs:  []onnxtest.Value{{Name: "x", ElemType: onnxtest.Float32, Dims: dims, Names: []string{"batch"}}},
			Outputs: []onnxtest.Value{{Name: "y", ElemType: onnxtest.Float32, Dims: dims, Names: []string{"batch"}}},
			Nodes:   []onnxtest.Node{{Op: "Identity", Inputs: []string{"x"}, Outputs: []string{"y"}}},
		}.Bytes()
		m, err := LoadBytes("huge", data)
		require.NoError(t, err)
		s, err := NewSession(m, Options{Capacity: 8})
		if err == nil {
			s.Close()
		}
		var le *LimitError
		require.True(t, errors.As(err, &le), "%v: %v", dims, err)
		require.Equal(t, "x", le.Name)
	}
}

func TestTensorElems(t *testing.T) {
	for _, c := range []struct {
		shape []int64
		axis  int
		batch int
		want  int
		ok    bool
	}{
		{[]int64{1, 4}, 0, 256, 1024, true},
		{[]int64{2, 1, 3}, 1, 5, 30, true},
		{[]int64{4, 0}, -1, 0, 0, true},
		{[]int64{1 << 32, 1 << 32}, -1, 0, 0, false}, // wraps to 0 unchecked
		{[]int64{MaxTensorElements + 1}, -1, 0, 0, false},
		{[]int64{-1, 4}, -1, 0, 0, false},
	} {
		n, err := tensorElems("t", c.shape, c.axis, c.batch)
		if (err == nil) != c.ok || n != c.want {
			t.Errorf("tensorElems(%v, %d, %d) = %d, %v; want %d, ok %v", c.shape, c.axis, c.batch, n, err, c.want, c.ok)
		}
	}
}

// TestLimitErrorShape: issue 35's repro. A static input of shape [65536, 8192] (a fixed batch
// of 65536) was reported as "tensor "obs" of shape [1 8192] has more than 268435456 elements
// (MaxTensorElements)": the shape the session allocates is named, not its batch-1 base, and
// no Go name.
func TestLimitErrorShape(t *testing.T) {
	_, err := tensorElems("obs", []int64{1, 8192}, 0, 65536)
	require.EqualError(t, err, `inference: tensor "obs" of shape [65536 8192] (dimension 0 is the batch size, 65536) has more than 268435456 elements, the most one tensor may hold (1 GiB of float32)`)
	_, err = tensorElems("x", []int64{1 << 40, 4}, -1, 0)
	require.EqualError(t, err, `inference: tensor "x" of shape [1099511627776 4] has more than 268435456 elements, the most one tensor may hold (1 GiB of float32)`)
	require.NotContains(t, err.Error(), "MaxTensorElements")
}
