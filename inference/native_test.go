package inference

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ort "github.com/yalue/onnxruntime_go"

	"github.com/onnxrl/sampler/internal/onnxtest"
)

// needNative skips when the provider library is not built (CI builds it first: `make test`).
func needNative(tb testing.TB) {
	tb.Helper()
	needRuntime(tb)
	if err := ensureNative(); err != nil {
		if errors.Is(err, ErrNativeNotFound) {
			tb.Skipf("the native provider is not built (run `make native`): %v", err)
		}
		tb.Fatal(err)
	}
}

// TestBindingLayout pins the binding's private layout that native_capi.go reads.
func TestBindingLayout(t *testing.T) {
	so := reflect.TypeOf(ort.SessionOptions{})
	require.Equal(t, 1, so.NumField(), "SessionOptions changed shape")
	assert.Equal(t, "o", so.Field(0).Name)
	assert.Equal(t, reflect.Pointer, so.Field(0).Type.Kind())

	das := reflect.TypeOf(ort.DynamicAdvancedSession{})
	require.GreaterOrEqual(t, das.NumField(), 1)
	f := das.Field(0)
	require.Equal(t, "s", f.Name, "DynamicAdvancedSession's first field")
	require.Equal(t, reflect.Pointer, f.Type.Kind())
	adv := f.Type.Elem()
	require.Equal(t, "AdvancedSession", adv.Name())
	assert.Equal(t, "ortSession", adv.Field(0).Name)
	assert.Equal(t, uintptr(0), adv.Field(0).Offset)
	assert.Equal(t, reflect.Pointer, adv.Field(0).Type.Kind())
}

// TestOrtAPIIndices compiles a C program against the pinned module's header and checks the
// OrtApi indices native_capi.go uses.
func TestOrtAPIIndices(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc) to read the header with")
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/yalue/onnxruntime_go").Output()
	if err != nil {
		t.Skipf("go list of the binding's module: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	var src strings.Builder
	src.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include \"onnxruntime_c_api.h\"\nint main(void) {\n")
	fmt.Fprintf(&src, "  printf(\"%%d\\n\", ORT_API_VERSION);\n")
	names := make([]string, 0, len(capiIndices))
	for name := range capiIndices {
		names = append(names, name)
		fmt.Fprintf(&src, "  printf(\"%s %%zu\\n\", offsetof(OrtApi, %s) / sizeof(void*));\n", name, name)
	}
	src.WriteString("  return 0;\n}\n")
	tmp := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "idx.c"), []byte(src.String()), 0o644))
	build := exec.Command(cc, "-I", dir, "-o", filepath.Join(tmp, "idx"), filepath.Join(tmp, "idx.c"))
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("compiling against %s: %v\n%s", dir, err, b)
	}
	res, err := exec.Command(filepath.Join(tmp, "idx")).Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(res)), "\n")
	assert.Equal(t, "24", lines[0], "ORT_API_VERSION of the pinned header")
	got := map[string]int{}
	for _, l := range lines[1:] {
		name, idx, _ := strings.Cut(l, " ")
		got[name], _ = strconv.Atoi(idx)
	}
	assert.Equal(t, capiIndices, got, "OrtApi indices in native_capi.go differ from the header in %s", dir)
	assert.Len(t, got, len(names))
}

func TestParseNativeDevice(t *testing.T) {
	for in, want := range map[string]string{"native": "native", "native:host": "native", "NATIVE:cuda": "native:cuda:0", "native:cuda:2": "native:cuda:2"} {
		d, err := ParseDevice(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, d.String())
		assert.Equal(t, "native", d.Provider)
	}
	for _, bad := range []string{"native:gpu", "native:cuda:x", "native:cuda:-1", "native:host:0"} {
		_, err := ParseDevice(bad)
		assert.Error(t, err, bad)
	}
}

func TestRegisterNativeErrors(t *testing.T) {
	needRuntime(t)
	err := RegisterNative(filepath.Join(t.TempDir(), "libmissing.so"))
	require.ErrorIs(t, err, ErrNativeNotFound)
	assert.Contains(t, err.Error(), "libmissing.so")
	needNative(t)
	// A second registration: an error, and the first stays in use.
	err = RegisterNative(NativeLibraryPath())
	require.ErrorIs(t, err, ErrNativeRegistered)
	assert.Contains(t, err.Error(), NativeLibraryPath())
}

func TestNativeBadOptions(t *testing.T) {
	needNative(t)
	m, err := LoadFile("../models/cartpole_mlp.onnx")
	require.NoError(t, err)
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{Device: "native", ProviderOptions: map[string]string{"bogus": "1"}}, `unknown provider option "bogus"`},
		{Options{Device: "native", ProviderOptions: map[string]string{"backend": "tpu"}}, `unknown backend "tpu"`},
		{Options{Device: "native", ProviderOptions: map[string]string{"device_id": "x"}}, `device_id "x"`},
		{Options{Device: "native", ProviderOptions: map[string]string{"device_id": "3"}}, "the host backend has only device 0"},
	} {
		_, err := NewSession(m, c.opts)
		require.Error(t, err, "%+v", c.opts)
		assert.Contains(t, err.Error(), c.want)
	}
	// The provider still works after the rejections.
	s, err := NewSession(m, Options{Device: "native"})
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

// fillInputs writes the same pseudo-random values into both sessions' inputs.
func fillInputs(t testing.TB, rng *rand.Rand, a, b *Session) {
	for i, in := range a.Inputs() {
		x := a.Inputs()[i].Float32()
		for j := range x {
			x[j] = float32(rng.Float64()*2 - 1)
		}
		copy(b.Inputs()[i].Float32(), x)
		_ = in
	}
}

// compareOutputs checks b's outputs against a's (the CPU provider's) to 1e-5, relative to the
// largest magnitude in the output tensor when above 1: the two providers sum in different
// orders, and a trained value head adds terms of magnitude ~100 that cancel to ~0.1, where
// float32 rounding alone differs by more than 1e-5 absolute.
func compareOutputs(t testing.TB, what string, a, b *Session) {
	t.Helper()
	for i, out := range a.Outputs() {
		want, got := out.Float32(), b.Outputs()[i].Float32()
		require.Equal(t, len(want), len(got))
		bad := 0
		scale := 1.0
		for _, w := range want {
			scale = math.Max(scale, math.Abs(float64(w)))
		}
		for j := range want {
			tol := 1e-5 * scale
			if d := math.Abs(float64(got[j] - want[j])); !(d <= tol) {
				if bad < 3 {
					t.Errorf("%s: output %s[%d] = %v, the CPU provider gives %v", what, a.Model().Outputs[i].Name, j, got[j], want[j])
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d values of %s differ", what, bad, len(want), a.Model().Outputs[i].Name)
		}
	}
}

var nativeBatches = []int{1, 7, 256, 4096}

// matchCPU runs m through the CPU provider and the native one at every batch size and compares.
func matchCPU(t *testing.T, m *Model) []AssignedSubgraph {
	return matchOn(t, m, "native", nativeBatches)
}

// matchOn runs m through the CPU provider (one thread) and device at each batch size and
// compares; the host provider ("native") with one intra-op thread and with two, as its
// kernels split rows over the session's threads.
func matchOn(t *testing.T, m *Model, device string, batches []int) []AssignedSubgraph {
	capacity := slices.Max(batches)
	cpu, err := NewSession(m, Options{Capacity: capacity, IntraOpThreads: 1})
	require.NoError(t, err)
	defer cpu.Close()
	threadCounts := []int{0} // the runtime's default
	if device == "native" {
		threadCounts = []int{1, 2}
	}
	var a []AssignedSubgraph
	for _, threads := range threadCounts {
		nat, err := NewSession(m, Options{Device: device, Capacity: capacity, IntraOpThreads: threads, RecordAssignment: true})
		require.NoError(t, err)
		rng := rand.New(rand.NewSource(1))
		for _, n := range batches {
			require.NoError(t, cpu.SetBatch(n))
			require.NoError(t, nat.SetBatch(n))
			for rep := 0; rep < 2; rep++ {
				fillInputs(t, rng, cpu, nat)
				require.NoError(t, cpu.Run())
				require.NoError(t, nat.Run())
				compareOutputs(t, fmt.Sprintf("%s on %s, %d thread(s), batch %d", m.Path, device, threads, n), cpu, nat)
			}
		}
		a, err = nat.Assignment()
		nat.Close()
		require.NoError(t, err)
	}
	return a
}

func nodesOn(subs []AssignedSubgraph, provider string) []string {
	var out []string
	for _, s := range subs {
		if s.Provider == provider {
			for _, n := range s.Nodes {
				out = append(out, n.OpType)
			}
		}
	}
	return out
}

func TestNativeMatchesCPUBundled(t *testing.T) {
	needNative(t)
	paths, _ := filepath.Glob("../models/*.onnx")
	require.NotEmpty(t, paths)
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			m, err := LoadFile(p)
			require.NoError(t, err)
			subs := matchCPU(t, m)
			claimed := nodesOn(subs, NativeProvider)
			t.Logf("claimed %v; on the CPU provider: %v", claimed, nodesOn(subs, "CPUExecutionProvider"))
			// Every node of the MLP, CNN and recurrent policies runs in the provider.
			assert.Empty(t, nodesOn(subs, "CPUExecutionProvider"), "nodes left on the CPU provider")
			assert.NotEmpty(t, claimed)
		})
	}
}

func TestNativeMatchesCPURandomGraphs(t *testing.T) {
	needNative(t)
	paths, _ := filepath.Glob("testdata/native/*.onnx")
	if len(paths) == 0 {
		t.Fatal("no graphs in testdata/native (generate them with models/export/run_ep_graphs.sh)")
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			m, err := LoadFile(p)
			require.NoError(t, err)
			subs := matchCPU(t, m)
			assert.Empty(t, nodesOn(subs, "CPUExecutionProvider"), "nodes left on the CPU provider")
		})
	}
}

func randFloats(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.Float64() - 0.5)
	}
	return v
}

// splitModel: h = tanh(x W1 + b1); y = Sin(h) W2 + h W3. Sin is not supported, and the Gemm
// after it must not share a partition with the nodes before it (a cycle through Sin).
func splitModel() []byte {
	rng := rand.New(rand.NewSource(7))
	return onnxtest.Model{
		Inputs:  []onnxtest.Value{{Name: "x", ElemType: onnxtest.Float32, Dims: []int64{-1, 4}, Names: dyn("batch")}},
		Outputs: []onnxtest.Value{{Name: "y", ElemType: onnxtest.Float32, Dims: []int64{-1, 3}, Names: dyn("batch")}},
		Initializers: []onnxtest.Initializer{
			{Name: "W1", Dims: []int64{4, 8}, Data: randFloats(rng, 32)},
			{Name: "b1", Dims: []int64{8}, Data: randFloats(rng, 8)},
			{Name: "W2", Dims: []int64{8, 3}, Data: randFloats(rng, 24)},
			{Name: "W3", Dims: []int64{8, 3}, Data: randFloats(rng, 24)},
		},
		Nodes: []onnxtest.Node{
			{Name: "gemm1", Op: "Gemm", Inputs: []string{"x", "W1", "b1"}, Outputs: []string{"a"}},
			{Name: "tanh1", Op: "Tanh", Inputs: []string{"a"}, Outputs: []string{"h"}},
			{Name: "sin", Op: "Sin", Inputs: []string{"h"}, Outputs: []string{"s"}},
			{Name: "mm2", Op: "MatMul", Inputs: []string{"s", "W2"}, Outputs: []string{"p"}},
			{Name: "mm3", Op: "MatMul", Inputs: []string{"h", "W3"}, Outputs: []string{"q"}},
			{Name: "add", Op: "Add", Inputs: []string{"p", "q"}, Outputs: []string{"y"}},
		},
	}.Bytes()
}

func TestNativeSplitsAroundUnsupported(t *testing.T) {
	needNative(t)
	m, err := LoadBytes("split", splitModel())
	require.NoError(t, err)
	subs := matchCPU(t, m)
	groups := 0
	for _, s := range subs {
		if s.Provider == NativeProvider {
			groups++
		}
	}
	// The runtime may fuse nodes first (MatMul+Add into Gemm), so count, not names.
	t.Logf("the assignment record: %+v", subs)
	assert.Equal(t, []string{"Sin"}, nodesOn(subs, "CPUExecutionProvider"), "the record: %+v", subs)
	assert.Equal(t, 2, groups, "two partitions around Sin: %+v", subs)
}

// FuzzParseDevice: any string parses or fails cleanly, and a parsed device's String parses back
// to the same device.
func FuzzParseDevice(f *testing.F) {
	for _, s := range []string{"", "cpu", "cuda:1", "native", "native:cuda:3", "native:host", "native:", "tensorrt:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDevice(s)
		if err != nil {
			return
		}
		back, err := ParseDevice(d.String())
		if err != nil || back != d {
			t.Fatalf("%q parsed to %+v, whose String %q parses to %+v (%v)", s, d, d.String(), back, err)
		}
	})
}
