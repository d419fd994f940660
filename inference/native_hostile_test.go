package inference

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/internal/onnxtest"
)

// Hostile graphs (issue 37): sizes that overflow, indices out of range and zero-sized
// dimensions must reach the caller as the session's error or as the CPU provider's result,
// never crash the process.

// ints is an int64 constant of shape dims; 1-D when dims is nil.
func ints(name string, dims []int64, v ...int64) onnxtest.Initializer {
	if dims == nil {
		dims = []int64{int64(len(v))}
	}
	return onnxtest.Initializer{Name: name, Dims: dims, ElemType: onnxtest.Int64, Ints: v}
}

// overflowModel: Reshape(obs, [2^62+1, 4]) (its element count wraps to 4 in int64), then
// Gather(index [2^40]) and a MatMul to the logits of a policy. It segfaulted inside libonnxrl_ep (the Gather read far out
// of bounds) from `sample infer`, `sample inspect --device native` and onnxrl_policy_open.
func overflowModel() []byte {
	rng := rand.New(rand.NewSource(3))
	return onnxtest.Model{
		Inputs:  []onnxtest.Value{{Name: "obs", ElemType: onnxtest.Float32, Dims: []int64{-1, 4}, Names: dyn("batch")}},
		Outputs: []onnxtest.Value{{Name: "logits", ElemType: onnxtest.Float32, Dims: []int64{-1, 2}, Names: dyn("batch")}},
		Initializers: []onnxtest.Initializer{
			ints("shape", []int64{2}, 1<<62+1, 4),
			ints("idx", []int64{1}, 1<<40),
			{Name: "W", Dims: []int64{4, 2}, Data: randFloats(rng, 8)},
		},
		Nodes: []onnxtest.Node{
			{Name: "reshape", Op: "Reshape", Inputs: []string{"obs", "shape"}, Outputs: []string{"r"}},
			{Name: "gather", Op: "Gather", Inputs: []string{"r", "idx"}, Outputs: []string{"g"}},
			{Name: "mm", Op: "MatMul", Inputs: []string{"g", "W"}, Outputs: []string{"logits"}},
		},
	}.Bytes()
}

func TestNativeHostileOverflow(t *testing.T) {
	needNative(t)
	m, err := LoadBytes("overflow", overflowModel())
	require.NoError(t, err)
	_, err = NewSession(m, Options{IntraOpThreads: 1})
	require.Error(t, err, "the CPU provider")
	t.Logf("the CPU provider: %v", err)
	_, err = NewSession(m, Options{Device: "native"})
	require.Error(t, err)
	t.Logf("ours: %v", err)
	assert.Contains(t, err.Error(), "reshape")
}

// emptyKModel: obs [batch, 0] times a [0, 2] weight (K = 0), then a Gemm with K = 0 and a bias.
// It died of SIGFPE (the rows were counted by dividing by K).
func emptyKModel() []byte {
	return onnxtest.Model{
		Inputs: []onnxtest.Value{{Name: "obs", ElemType: onnxtest.Float32, Dims: []int64{-1, 0}, Names: dyn("batch")}},
		Outputs: []onnxtest.Value{
			{Name: "y", ElemType: onnxtest.Float32, Dims: []int64{-1, 2}, Names: dyn("batch")},
			{Name: "z", ElemType: onnxtest.Float32, Dims: []int64{-1, 3}, Names: dyn("batch")},
		},
		Initializers: []onnxtest.Initializer{
			{Name: "W", Dims: []int64{0, 2}},
			{Name: "V", Dims: []int64{0, 3}},
			{Name: "b", Dims: []int64{3}, Data: []float32{0.5, -1, 2}},
		},
		Nodes: []onnxtest.Node{
			{Name: "mm", Op: "MatMul", Inputs: []string{"obs", "W"}, Outputs: []string{"y"}},
			{Name: "gemm", Op: "Gemm", Inputs: []string{"obs", "V", "b"}, Outputs: []string{"z"}},
		},
	}.Bytes()
}

func TestNativeHostileEmptyK(t *testing.T) {
	needNative(t)
	m, err := LoadBytes("emptyk", emptyKModel())
	require.NoError(t, err)
	subs := matchOn(t, m, "native", []int{1, 3})
	assert.Len(t, nodesOn(subs, NativeProvider), 2, "%+v", subs)
	s, err := NewSession(m, Options{Device: "native", Capacity: 3})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.SetBatch(3))
	require.NoError(t, s.Run())
	assert.Equal(t, make([]float32, 6), s.Outputs()[0].Float32())
	assert.Equal(t, []float32{0.5, -1, 2, 0.5, -1, 2, 0.5, -1, 2}, s.Outputs()[1].Float32())
}

// matchOrBothFail runs m through the CPU provider and ours (batch 1 of Capacity 1): both fail,
// or both run to the same outputs. It returns our error.
func matchOrBothFail(t *testing.T, m *Model) error {
	t.Helper()
	want, cpuErr := runOnce(m, Options{IntraOpThreads: 1})
	got, natErr := runOnce(m, Options{IntraOpThreads: 1, Device: "native"})
	if cpuErr != nil {
		require.Error(t, natErr, "the CPU provider fails (%v), ours must too", cpuErr)
		return natErr
	}
	require.NoError(t, natErr)
	assert.Empty(t, sameOutputs(want, got))
	return nil
}

// indexModel: a Gather along the dynamic batch axis with a constant index, a Slice with the
// extreme starts and ends, then a MatMul; the index is out of range at batch 1 and 2, in range
// at 3 (the provider checks it when the batch size is known).
func indexModel(idx int64) []byte {
	rng := rand.New(rand.NewSource(4))
	return onnxtest.Model{
		Inputs:  []onnxtest.Value{{Name: "obs", ElemType: onnxtest.Float32, Dims: []int64{-1, 4}, Names: dyn("batch")}},
		Outputs: []onnxtest.Value{{Name: "y", ElemType: onnxtest.Float32, NoShape: true}},
		Initializers: []onnxtest.Initializer{
			ints("idx", []int64{1}, idx),
			ints("starts", nil, math.MinInt64, 1),
			ints("ends", nil, math.MaxInt64, math.MaxInt64),
			ints("axes", nil, 0, 1),
			ints("steps", nil, math.MaxInt64, 1),
			{Name: "W", Dims: []int64{3, 2}, Data: randFloats(rng, 6)},
		},
		Nodes: []onnxtest.Node{
			{Name: "gather", Op: "Gather", Inputs: []string{"obs", "idx"}, Outputs: []string{"g"}},
			{Name: "slice", Op: "Slice", Inputs: []string{"g", "starts", "ends", "axes", "steps"}, Outputs: []string{"s"}},
			{Name: "mm", Op: "MatMul", Inputs: []string{"s", "W"}, Outputs: []string{"y"}},
		},
	}.Bytes()
}

func TestNativeHostileIndices(t *testing.T) {
	needNative(t)
	for _, idx := range []int64{2, -3, 1 << 40, math.MinInt64} {
		m, err := LoadBytes("index", indexModel(idx))
		require.NoError(t, err)
		for _, batch := range []int{1, 3} {
			cpu, cpuErr := NewSession(m, Options{IntraOpThreads: 1, Capacity: 3})
			nat, natErr := NewSession(m, Options{Device: "native", Capacity: 3})
			if cpuErr != nil {
				require.Error(t, natErr, "index %d: the CPU provider fails (%v)", idx, cpuErr)
				assert.Contains(t, natErr.Error(), "out of range", "index %d", idx)
				continue
			}
			require.NoError(t, natErr, "index %d", idx)
			require.NoError(t, cpu.SetBatch(batch))
			require.NoError(t, nat.SetBatch(batch))
			fillInputs(t, rand.New(rand.NewSource(1)), cpu, nat)
			cpuErr, natErr = cpu.Run(), nat.Run()
			if cpuErr != nil {
				assert.Error(t, natErr, "index %d at batch %d: the CPU provider fails (%v)", idx, batch, cpuErr)
			} else {
				require.NoError(t, natErr, "index %d at batch %d", idx, batch)
				compareOutputs(t, fmt.Sprintf("index %d at batch %d", idx, batch), cpu, nat)
			}
			cpu.Close()
			nat.Close()
		}
	}
}

// shapeOpsModel: Reshape to shape, then a MatMul of the result's last dimension (4).
func shapeOpsModel(shape []int64, inDims []int64) []byte {
	rng := rand.New(rand.NewSource(5))
	return onnxtest.Model{
		Inputs:  []onnxtest.Value{{Name: "x", ElemType: onnxtest.Float32, Dims: inDims}},
		Outputs: []onnxtest.Value{{Name: "y", ElemType: onnxtest.Float32, NoShape: true}},
		Initializers: []onnxtest.Initializer{
			ints("shape", nil, shape...),
			{Name: "W", Dims: []int64{4, 3}, Data: randFloats(rng, 12)},
		},
		Nodes: []onnxtest.Node{
			{Name: "reshape", Op: "Reshape", Inputs: []string{"x", "shape"}, Outputs: []string{"r"}},
			{Name: "mm", Op: "MatMul", Inputs: []string{"r", "W"}, Outputs: []string{"y"}},
		},
	}.Bytes()
}

// Reshape's 0 and -1, negative and huge dimensions, a product that changes, zero-sized inputs.
func TestNativeHostileReshape(t *testing.T) {
	needNative(t)
	for _, c := range []struct {
		shape, in []int64
		fails     bool
	}{
		{[]int64{0, -1, 4}, []int64{2, 8}, false},
		{[]int64{-1, 4}, []int64{0, 8}, false},
		{[]int64{0, 4}, []int64{0, 4}, false},
		{[]int64{-1, -1, 4}, []int64{2, 8}, true},
		{[]int64{-2, 4}, []int64{2, 8}, true},
		{[]int64{3, 4}, []int64{2, 8}, true},
		{[]int64{1<<62 + 1, 4}, []int64{1, 4}, true},
		{[]int64{math.MaxInt64, 4}, []int64{2, 8}, true},
		{[]int64{0, 0, 0, 4}, []int64{2, 8}, true},
	} {
		m, err := LoadBytes("reshape", shapeOpsModel(c.shape, c.in))
		require.NoError(t, err)
		err = matchOrBothFail(t, m)
		assert.Equal(t, c.fails, err != nil, "Reshape %v to %v: %v", c.in, c.shape, err)
	}
}

// Zero-sized dimensions through Concat, Slice and Split into a MatMul.
func TestNativeHostileEmpty(t *testing.T) {
	needNative(t)
	rng := rand.New(rand.NewSource(6))
	m, err := LoadBytes("empty", onnxtest.Model{
		Inputs:  []onnxtest.Value{{Name: "x", ElemType: onnxtest.Float32, Dims: []int64{3, 4}}},
		Outputs: []onnxtest.Value{{Name: "y", ElemType: onnxtest.Float32, NoShape: true}, {Name: "z", ElemType: onnxtest.Float32, NoShape: true}},
		Initializers: []onnxtest.Initializer{
			{Name: "e", Dims: []int64{0, 4}},
			ints("starts", nil, 2), ints("ends", nil, 2),
			ints("split", nil, 0, 3),
			{Name: "W", Dims: []int64{4, 2}, Data: randFloats(rng, 8)},
		},
		Nodes: []onnxtest.Node{
			{Name: "concat", Op: "Concat", Inputs: []string{"e", "x", "e"}, Outputs: []string{"c"}, Attrs: []onnxtest.Attr{onnxtest.IntAttr("axis", 0)}},
			{Name: "slice", Op: "Slice", Inputs: []string{"c", "starts", "ends"}, Outputs: []string{"s"}},
			{Name: "split", Op: "Split", Inputs: []string{"c", "split"}, Outputs: []string{"p", "q"}},
			{Name: "mm1", Op: "MatMul", Inputs: []string{"s", "W"}, Outputs: []string{"y"}},
			{Name: "mm2", Op: "MatMul", Inputs: []string{"p", "W"}, Outputs: []string{"z"}},
		},
	}.Bytes())
	require.NoError(t, err)
	require.NoError(t, matchOrBothFail(t, m))
}

// TestAssignmentWithoutNative: the assignment record of a CPU session in a process that has
// not registered the native provider. `sample inspect --device cpu` segfaulted in
// onnxrl_capi_assignment (the runtime's C API was bound only when the provider was
// registered). A child process, so that no other test has bound it first.
func TestAssignmentWithoutNative(t *testing.T) {
	needRuntime(t)
	if os.Getenv("ONNXRL_TEST_ASSIGNMENT_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAssignmentWithoutNative$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "ONNXRL_TEST_ASSIGNMENT_CHILD=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "--- PASS: TestAssignmentWithoutNative")
		return
	}
	require.Empty(t, NativeLibraryPath(), "nothing registered the provider in the child")
	m, err := LoadFile("../models/cartpole_mlp.onnx")
	require.NoError(t, err)
	s, err := NewSession(m, Options{IntraOpThreads: 1, RecordAssignment: true})
	require.NoError(t, err)
	defer s.Close()
	subs, err := s.Assignment()
	require.NoError(t, err)
	require.NotEmpty(t, subs)
	for _, sub := range subs {
		assert.Equal(t, "CPUExecutionProvider", sub.Provider)
	}
	// Without the record: an error, not a crash.
	s2, err := NewSession(m, Options{IntraOpThreads: 1})
	require.NoError(t, err)
	defer s2.Close()
	_, err = s2.Assignment()
	t.Logf("without RecordAssignment: %v", err)
}
