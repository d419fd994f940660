package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/internal/onnxtest"
)

// TestPolicyOpenHostileNative: onnxrl_policy_open of a graph whose Reshape's element count
// overflows int64 ([2^62+1, 4] wraps to 4), then Gather(index 2^40) and a MatMul, on device
// native. It segfaulted inside libonnxrl_ep (issue 37); now a model error.
func TestPolicyOpenHostileNative(t *testing.T) {
	needRuntime(t)
	if err := inference.EnsureNative(); err != nil {
		if errors.Is(err, inference.ErrNativeNotFound) {
			t.Skipf("the native provider is not built (run `make native`): %v", err)
		}
		t.Fatal(err)
	}
	w := make([]float32, 8)
	for i := range w {
		w[i] = float32(i) / 8
	}
	data := onnxtest.Model{
		Inputs:  []onnxtest.Value{{Name: "obs", ElemType: onnxtest.Float32, Dims: []int64{-1, 4}, Names: []string{"batch"}}},
		Outputs: []onnxtest.Value{{Name: "logits", ElemType: onnxtest.Float32, Dims: []int64{-1, 2}, Names: []string{"batch"}}},
		Initializers: []onnxtest.Initializer{
			{Name: "shape", Dims: []int64{2}, ElemType: onnxtest.Int64, Ints: []int64{1<<62 + 1, 4}},
			{Name: "idx", Dims: []int64{1}, ElemType: onnxtest.Int64, Ints: []int64{1 << 40}},
			{Name: "W", Dims: []int64{4, 2}, Data: w},
		},
		Nodes: []onnxtest.Node{
			{Name: "reshape", Op: "Reshape", Inputs: []string{"obs", "shape"}, Outputs: []string{"r"}},
			{Name: "gather", Op: "Gather", Inputs: []string{"r", "idx"}, Outputs: []string{"g"}},
			{Name: "mm", Op: "MatMul", Inputs: []string{"g", "W"}, Outputs: []string{"logits"}},
		},
	}.Bytes()
	path := filepath.Join(t.TempDir(), "overflow.onnx")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	_, err := openPolicy(path, []byte(`{"device": "native"}`))
	require.Error(t, err)
	assert.Equal(t, statusModel, statusOf(err), "%v", err)
	assert.Contains(t, err.Error(), "node reshape")
}
