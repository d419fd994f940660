package inference

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/internal/onnxtest"
)

// needRuntime skips the test when the ONNX Runtime library cannot be loaded.
func needRuntime(tb testing.TB) {
	tb.Helper()
	if err := Init(); err != nil {
		tb.Skipf("ONNX Runtime not available (run `make onnxruntime`): %v", err)
	}
}

func dyn(name string) []string { return []string{name} }

// typesModel has an int64 input with a dynamic batch, a bool input, and passes both through
// (Identity, Not), plus a float32 output computed by Cast.
func typesModel() []byte {
	return onnxtest.Model{
		Inputs: []onnxtest.Value{
			{Name: "ids", ElemType: onnxtest.Int64, Dims: []int64{-1, 3}, Names: dyn("batch")},
			{Name: "mask", ElemType: onnxtest.Bool, Dims: []int64{-1}, Names: dyn("batch")},
		},
		Outputs: []onnxtest.Value{
			{Name: "ids_out", ElemType: onnxtest.Int64, Dims: []int64{-1, 3}, Names: dyn("n")},
			{Name: "not_mask", ElemType: onnxtest.Bool, Dims: []int64{-1}},
		},
		Nodes: []onnxtest.Node{
			{Op: "Identity", Inputs: []string{"ids"}, Outputs: []string{"ids_out"}},
			{Op: "Not", Inputs: []string{"mask"}, Outputs: []string{"not_mask"}},
		},
	}.Bytes()
}

// stateModel mimics a PyTorch RNN state: [layers, batch, hidden] in, doubled out.
func stateModel() []byte {
	return onnxtest.Model{
		Inputs: []onnxtest.Value{
			{Name: "h_in", ElemType: onnxtest.Float32, Dims: []int64{2, -1, 3}, Names: []string{"", "batch", ""}},
		},
		Outputs: []onnxtest.Value{
			{Name: "h_out", ElemType: onnxtest.Float32, Dims: []int64{2, -1, 3}, Names: []string{"", "odd_name", ""}},
		},
		Nodes: []onnxtest.Node{{Op: "Add", Inputs: []string{"h_in", "h_in"}, Outputs: []string{"h_out"}}},
	}.Bytes()
}

// fixedModel has a fixed batch of 4.
func fixedModel() []byte {
	return onnxtest.Model{
		Inputs:  []onnxtest.Value{{Name: "x", ElemType: onnxtest.Float32, Dims: []int64{4, 2}}},
		Outputs: []onnxtest.Value{{Name: "y", ElemType: onnxtest.Float32, Dims: []int64{4, 2}}},
		Nodes:   []onnxtest.Node{{Op: "Neg", Inputs: []string{"x"}, Outputs: []string{"y"}}},
	}.Bytes()
}

func TestLoadBytesIntrospection(t *testing.T) {
	m, err := LoadBytes("types", typesModel())
	require.NoError(t, err)
	require.Len(t, m.Inputs, 2)
	assert.Equal(t, "ids", m.Inputs[0].Name)
	assert.Equal(t, ElemInt64, m.Inputs[0].ElemType)
	assert.Equal(t, []int64{-1, 3}, m.Inputs[0].Shape)
	assert.Equal(t, []string{"batch", ""}, m.Inputs[0].DimNames)
	assert.True(t, m.Inputs[0].Dynamic(0))
	assert.False(t, m.Inputs[0].Dynamic(1))
	assert.Equal(t, "[batch,3]", m.Inputs[0].ShapeString())
	assert.Equal(t, ElemBool, m.Inputs[1].ElemType)
	assert.Equal(t, "not_mask bool[?]", m.Outputs[1].String())
	assert.Equal(t, int64(17), m.Opsets[""])
	assert.Equal(t, "onnxtest", m.ProducerName)
}

func TestMetadata(t *testing.T) {
	data := onnxtest.Model{
		Inputs:   []onnxtest.Value{{Name: "x", ElemType: onnxtest.Float32, Dims: []int64{-1, 2}}},
		Outputs:  []onnxtest.Value{{Name: "y", ElemType: onnxtest.Float32, Dims: []int64{-1, 2}}},
		Nodes:    []onnxtest.Node{{Op: "Identity", Inputs: []string{"x"}, Outputs: []string{"y"}}},
		Metadata: [][2]string{{"b", "2"}, {"a", "1"}},
	}.Bytes()
	m, err := LoadBytes("meta", data)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "1", "b": "2"}, m.Metadata)
	assert.Equal(t, []string{"b", "a"}, m.MetadataKeys)

	m2, err := m.WithMetadata("onnxrl.policy", `{"distribution":"deterministic"}`)
	require.NoError(t, err)
	assert.Equal(t, `{"distribution":"deterministic"}`, m2.Metadata["onnxrl.policy"])
	m3, err := m2.WithMetadata("a", "replaced")
	require.NoError(t, err)
	assert.Equal(t, "replaced", m3.Metadata["a"])

	needRuntime(t)
	// The runtime reads the same metadata from the appended bytes.
	s, err := NewSession(m2, Options{Capacity: 2})
	require.NoError(t, err)
	defer s.Close()
}

func TestLoadErrors(t *testing.T) {
	_, err := LoadFile(filepath.Join(t.TempDir(), "missing.onnx"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, err.Error(), "missing.onnx")

	for name, data := range map[string][]byte{
		"empty":   {},
		"garbage": []byte("this is not a model at all, just some text\n"),
		"binary":  {0xff, 0xff, 0xff, 0xff, 0x0f},
	} {
		_, err := LoadBytes(name, data)
		assert.ErrorIs(t, err, ErrNotONNX, name)
		var me *ModelError
		assert.ErrorAs(t, err, &me, name)
	}

	full := typesModel()
	for _, cut := range []int{1, 10, len(full) / 2, len(full) - 1} {
		_, err := LoadBytes("truncated", full[:cut])
		assert.ErrorIs(t, err, ErrNotONNX, "cut at %d", cut)
	}
}

func TestRunInt64AndBool(t *testing.T) {
	needRuntime(t)
	m, err := LoadBytes("types", typesModel())
	require.NoError(t, err)
	s, err := NewSession(m, Options{Capacity: 8})
	require.NoError(t, err)
	defer s.Close()
	for _, n := range []int{3, 1, 8, 3} {
		require.NoError(t, s.SetBatch(n))
		ids, _ := s.Input("ids")
		mask, _ := s.Input("mask")
		for i := range ids.Int64() {
			ids.Int64()[i] = int64(i*7 + n)
		}
		for i := range mask.Bool() {
			mask.Bool()[i] = i%2 == 0
		}
		require.NoError(t, s.Run())
		out, _ := s.Output("ids_out")
		notMask, _ := s.Output("not_mask")
		assert.Equal(t, []int64{int64(n), 3}, out.Shape())
		assert.Equal(t, ids.Int64(), out.Int64())
		for i, b := range notMask.Bool() {
			assert.Equal(t, i%2 != 0, b)
		}
	}
	assert.Panics(t, func() { s.Inputs()[0].Float32() }, "a float32 view of an int64 tensor is a programmer error")
}

func TestStateBatchAxis(t *testing.T) {
	needRuntime(t)
	m, err := LoadBytes("state", stateModel())
	require.NoError(t, err)
	s, err := NewSession(m, Options{Capacity: 16})
	require.NoError(t, err)
	defer s.Close()
	in, out := s.Inputs()[0], s.Outputs()[0]
	assert.Equal(t, 1, in.BatchAxis)
	assert.Equal(t, 1, out.BatchAxis, "found by probing although the exported name differs")
	require.NoError(t, s.SetBatch(5))
	assert.Equal(t, []int64{2, 5, 3}, in.Shape())
	assert.Equal(t, 2, in.Outer())
	assert.Equal(t, 3, in.Inner())
	assert.Equal(t, 6, in.RowSize())
	// Write row i's chunk k at (k*batch+i)*inner with a recognisable value.
	for k := 0; k < in.Outer(); k++ {
		for i := 0; i < 5; i++ {
			for h := 0; h < in.Inner(); h++ {
				in.Float32()[(k*5+i)*in.Inner()+h] = float32(100*k + 10*i + h)
			}
		}
	}
	require.NoError(t, s.Run())
	for k := 0; k < 2; k++ {
		for i := 0; i < 5; i++ {
			for h := 0; h < 3; h++ {
				assert.Equal(t, float32(2*(100*k+10*i+h)), out.Float32()[(k*5+i)*3+h])
			}
		}
	}
}

func TestFixedBatch(t *testing.T) {
	needRuntime(t)
	m, err := LoadBytes("fixed", fixedModel())
	require.NoError(t, err)
	s, err := NewSession(m, Options{Capacity: 100})
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, 4, s.FixedBatch())
	assert.Equal(t, 4, s.Capacity())
	require.NoError(t, s.SetBatch(2))
	x := s.Inputs()[0]
	copy(x.Float32(), []float32{1, 2, 3, 4})
	require.NoError(t, s.Run())
	assert.Equal(t, []float32{-1, -2, -3, -4}, s.Outputs()[0].Float32())
	var be *BatchError
	assert.ErrorAs(t, s.SetBatch(5), &be)
}

func TestInferErrors(t *testing.T) {
	needRuntime(t)
	m, err := LoadBytes("types", typesModel())
	require.NoError(t, err)
	s, err := NewSession(m, Options{Capacity: 4})
	require.NoError(t, err)
	defer s.Close()
	ok := map[string]Data{
		"ids":  {Shape: []int64{2, 3}, Values: []float64{1, 2, 3, 4, 5, 6}},
		"mask": {Shape: []int64{2}, Values: []float64{1, 0}},
	}
	out, err := s.Infer(ok)
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 2, 3, 4, 5, 6}, out["ids_out"].Values)
	assert.Equal(t, []float64{0, 1}, out["not_mask"].Values)

	with := func(name string, d Data) map[string]Data {
		in := map[string]Data{"ids": ok["ids"], "mask": ok["mask"]}
		in[name] = d
		return in
	}
	_, err = s.Infer(with("nope", Data{Shape: []int64{1}, Values: []float64{0}}))
	var une *UnknownNameError
	require.ErrorAs(t, err, &une)
	assert.Equal(t, "nope", une.Name)
	assert.Equal(t, []string{"ids", "mask"}, une.Known)

	_, err = s.Infer(map[string]Data{"ids": ok["ids"]})
	assert.ErrorContains(t, err, `input "mask" (bool[batch]) is missing`)

	_, err = s.Infer(with("ids", Data{Shape: []int64{2, 4}, Values: make([]float64, 8)}))
	var sme *ShapeMismatchError
	require.ErrorAs(t, err, &sme)
	assert.Equal(t, "ids", sme.Input)
	assert.Equal(t, "[batch,3]", sme.Want)
	assert.Equal(t, []int64{2, 4}, sme.Got)
	assert.Contains(t, err.Error(), `input "ids": shape [2,4] does not match the expected [batch,3]`)

	_, err = s.Infer(with("mask", Data{Shape: []int64{3}, Values: []float64{1, 1, 1}}))
	require.ErrorAs(t, err, &sme, "batch sizes disagree")

	_, err = s.Infer(with("ids", Data{Shape: []int64{5, 3}, Values: make([]float64, 15)}))
	require.ErrorAs(t, err, &sme, "over capacity")

	_, err = s.Infer(with("ids", Data{Shape: []int64{2, 3}, Values: []float64{1.5, 2, 3, 4, 5, 6}}))
	var te *TypeError
	require.ErrorAs(t, err, &te, "1.5 is no int64")
	assert.Equal(t, "ids", te.Name)
	assert.Equal(t, ElemInt64, te.Want)

	_, err = s.Infer(with("mask", Data{Shape: []int64{2}, Values: []float64{2, 0}}))
	require.ErrorAs(t, err, &te, "2 is no bool")

	// The session still works after every error.
	_, err = s.Infer(ok)
	require.NoError(t, err)
}

func TestDevicesAndOptions(t *testing.T) {
	for in, want := range map[string]string{"": "cpu", "cpu": "cpu", "cuda": "cuda:0", "CUDA:1": "cuda:1", "tensorrt:2": "tensorrt:2"} {
		d, err := ParseDevice(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, d.String())
	}
	for _, bad := range []string{"gpu", "cuda:x", "cuda:-1", "cpu:0", "rocm"} {
		_, err := ParseDevice(bad)
		assert.Error(t, err, bad)
	}
	yes := true
	kv := cudaProviderOptions(Device{Provider: "cuda", ID: 1}, Options{CUDA: CUDAOptions{EnableCUDAGraph: true, GPUMemLimit: 1 << 30,
		ArenaExtendStrategy: "kSameAsRequested", CudnnConvAlgoSearch: "HEURISTIC", DoCopyInDefaultStream: &yes},
		ProviderOptions: map[string]string{"tunable_op_enable": "1"}})
	assert.Equal(t, map[string]string{"device_id": "1", "enable_cuda_graph": "1", "gpu_mem_limit": "1073741824",
		"arena_extend_strategy": "kSameAsRequested", "cudnn_conv_algo_search": "HEURISTIC",
		"do_copy_in_default_stream": "1", "tunable_op_enable": "1"}, kv)

	needRuntime(t)
	m, err := LoadBytes("fixed", fixedModel())
	require.NoError(t, err)
	for _, opts := range []Options{
		{IntraOpThreads: 1, InterOpThreads: 1, GraphOptimization: "disable"},
		{GraphOptimization: "basic"}, {GraphOptimization: "extended"}, {GraphOptimization: "ALL"},
	} {
		s, err := NewSession(m, opts)
		require.NoError(t, err, "%+v", opts)
		require.NoError(t, s.Close())
		require.NoError(t, s.Close(), "Close twice")
		assert.ErrorIs(t, s.Run(), ErrClosed)
	}
	_, err = NewSession(m, Options{GraphOptimization: "max"})
	assert.ErrorContains(t, err, `unknown graph optimization level "max"`)
	_, err = NewSession(m, Options{Device: "gpu"})
	assert.ErrorContains(t, err, `unknown device "gpu"`)
}

// The CPU runtime installed by `make onnxruntime` has no CUDA or TensorRT provider: asking for
// one is an error that names the library and says how to get a GPU build.
func TestGPUProviderMissing(t *testing.T) {
	needRuntime(t)
	m, err := LoadBytes("fixed", fixedModel())
	require.NoError(t, err)
	for _, dev := range []string{"cuda:0", "tensorrt"} {
		s, err := NewSession(m, Options{Device: dev})
		if err == nil {
			s.Close()
			t.Skipf("the runtime at %s has the %s provider", LibraryPath(), dev)
		}
		var pe *ProviderError
		require.ErrorAs(t, err, &pe, dev)
		assert.Equal(t, LibraryPath(), pe.Library)
		assert.Contains(t, err.Error(), LibraryEnv)
		assert.Contains(t, err.Error(), "GPU build")
	}
}

func TestLibraryLookup(t *testing.T) {
	t.Setenv(LibraryEnv, filepath.Join(t.TempDir(), "nope.so"))
	try, tried := candidates()
	assert.Empty(t, try, "an explicit path that does not exist is not replaced by another library")
	require.Len(t, tried, 1)
	assert.Contains(t, tried[0], "nope.so")

	t.Setenv(LibraryEnv, "")
	try, tried = candidates()
	assert.Contains(t, tried[0], "unset")
	assert.Equal(t, systemLibraries, try[len(try)-len(systemLibraries):], "the system path comes last")

	// AlsoLookIn's directories come before the project's install: the one holding the
	// library is tried, the empty one is named in the error's list.
	beside, empty := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(beside, "libonnxruntime.so.1"), nil, 0o644))
	initMu.Lock()
	saved := alsoDirs
	alsoDirs = []string{empty, beside}
	initMu.Unlock()
	defer func() { initMu.Lock(); alsoDirs = saved; initMu.Unlock() }()
	try, tried = candidates()
	assert.Equal(t, filepath.Join(beside, "libonnxruntime.so.1"), try[0])
	assert.Contains(t, tried, filepath.Join(empty, "libonnxruntime.so.1")+" (not there)")

	e := &LibraryNotFoundError{Tried: []string{"a (missing)", "b (missing)"}}
	assert.ErrorIs(t, e, ErrLibraryNotFound)
	assert.Contains(t, e.Error(), "tried: a (missing); b (missing)")
	assert.Contains(t, e.Error(), "make onnxruntime")
}

func TestConcurrentInitAndSessions(t *testing.T) {
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = Init() }()
	}
	wg.Wait()
	for _, err := range errs[1:] {
		assert.Equal(t, errs[0], err, "every caller sees the first result")
	}
	needRuntime(t)
	assert.True(t, strings.HasPrefix(Version(), "1."), Version())

	m, err := LoadBytes("state", stateModel())
	require.NoError(t, err)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := NewSession(m, Options{Capacity: 8, IntraOpThreads: 1})
			if !assert.NoError(t, err) {
				return
			}
			defer s.Close()
			for it := range 50 {
				n := 1 + (it+w)%8
				if !assert.NoError(t, s.SetBatch(n)) {
					return
				}
				for i := range s.Inputs()[0].Float32() {
					s.Inputs()[0].Float32()[i] = float32(w*1000 + i)
				}
				if !assert.NoError(t, s.Run()) {
					return
				}
				for i, v := range s.Outputs()[0].Float32() {
					if v != float32(2*(w*1000+i)) {
						t.Errorf("worker %d: out[%d] = %v", w, i, v)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestRunAllocatesNothing(t *testing.T) {
	needRuntime(t)
	m, err := LoadBytes("state", stateModel())
	require.NoError(t, err)
	s, err := NewSession(m, Options{Capacity: 256})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.SetBatch(7))
	require.NoError(t, s.SetBatch(256))
	allocs := testing.AllocsPerRun(200, func() {
		for _, n := range []int{7, 256} {
			if err := s.SetBatch(n); err != nil {
				t.Fatal(err)
			}
			if err := s.Run(); err != nil {
				t.Fatal(err)
			}
		}
	})
	assert.Zero(t, allocs)
}

func FuzzLoadBytes(f *testing.F) {
	for _, seed := range [][]byte{typesModel(), stateModel(), fixedModel(), {}, []byte("garbage"), typesModel()[:20]} {
		f.Add(seed)
	}
	if data, err := os.ReadFile("../models/cartpole_mlp.onnx"); err == nil {
		f.Add(data)
	}
	runtime := Init() == nil
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := LoadBytes("fuzz", data)
		if err != nil {
			if !errors.Is(err, ErrNotONNX) {
				t.Fatalf("error does not wrap ErrNotONNX: %v", err)
			}
			return
		}
		for _, v := range append(m.Inputs, m.Outputs...) {
			if len(v.DimNames) != len(v.Shape) {
				t.Fatalf("%s: %d dim names for %d dims", v.Name, len(v.DimNames), len(v.Shape))
			}
			_ = v.String()
		}
		if !runtime {
			return
		}
		// The runtime gets whatever parsed; it must refuse bad graphs with an error.
		s, err := NewSession(m, Options{Capacity: 2})
		if err == nil {
			s.Close()
		}
	})
}
