package inference

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireCUDAEnv makes a missing GPU a failure instead of a skip (scripts/device-check.sh).
const requireCUDAEnv = "ONNXRL_REQUIRE_CUDA"

// needCUDA skips unless the native provider's CUDA backend opens on device 0 here (a GPU, its
// driver and an NVRTC no newer than the driver).
func needCUDA(tb testing.TB) {
	tb.Helper()
	needNative(tb)
	m, err := LoadFile("../models/cartpole_mlp.onnx")
	require.NoError(tb, err)
	s, err := NewSession(m, Options{Device: "native:cuda:0"})
	if err != nil {
		if os.Getenv(requireCUDAEnv) == "1" {
			tb.Fatalf("the CUDA backend does not open (%s=1): %v", requireCUDAEnv, err)
		}
		tb.Skipf("no CUDA backend on this machine: %v", err)
	}
	require.NoError(tb, s.Close())
}

// cudaBatches are the batch sizes the CUDA backend is checked at against the CPU provider.
var cudaBatches = []int{1, 7, 256, 4096, 65536}

func TestNativeCUDAMatchesCPU(t *testing.T) {
	needCUDA(t)
	bundled, _ := filepath.Glob("../models/*.onnx")
	graphs, _ := filepath.Glob("testdata/native/*.onnx")
	require.NotEmpty(t, bundled)
	require.NotEmpty(t, graphs)
	for _, p := range append(bundled, graphs...) {
		t.Run(filepath.Base(p), func(t *testing.T) {
			m, err := LoadFile(p)
			require.NoError(t, err)
			subs := matchOn(t, m, "native:cuda:0", fittingBatches(m, cudaBatches))
			assert.NotEmpty(t, nodesOn(subs, NativeProvider))
			if !strings.Contains(p, "cnn") {
				assert.Empty(t, nodesOn(subs, "CPUExecutionProvider"), "nodes left on the CPU provider")
			}
		})
	}
}

// fittingBatches returns the batches at which every input of m holds at most
// MaxTensorElements (the Nature CNN's 4x84x84 observations stop before 65,536).
func fittingBatches(m *Model, batches []int) []int {
	row := 1
	for _, in := range m.Inputs {
		n := 1
		for _, d := range in.Shape {
			if d > 0 {
				n *= int(d)
			}
		}
		row = max(row, n)
	}
	var out []int
	for _, b := range batches {
		if b*row <= MaxTensorElements {
			out = append(out, b)
		}
	}
	return out
}

func TestNativeCUDABadDevice(t *testing.T) {
	needCUDA(t)
	m, err := LoadFile("../models/cartpole_mlp.onnx")
	require.NoError(t, err)
	_, err = NewSession(m, Options{Device: "native:cuda:99"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "device_id 99: this machine has")
}

// TestNativeCUDANoDriver opens native:cuda:0 in a child process whose driver library does not
// exist: the session fails with an error that names the missing library, and never falls back
// to the host backend.
func TestNativeCUDANoDriver(t *testing.T) {
	if os.Getenv("ONNXRL_TEST_NO_DRIVER_CHILD") == "1" {
		needNative(t)
		m, err := LoadFile("../models/cartpole_mlp.onnx")
		require.NoError(t, err)
		s, err := NewSession(m, Options{Device: "native:cuda:0"})
		if err == nil {
			s.Close()
			t.Fatal("native:cuda:0 opened without a driver")
		}
		t.Logf("error: %v", err)
		assert.Contains(t, err.Error(), "the NVIDIA driver library was not found")
		assert.Contains(t, err.Error(), "/nonexistent/libcuda.so.1")
		assert.ErrorIs(t, err, ErrDeviceUnavailable)
		return
	}
	needNative(t)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestNativeCUDANoDriver$", "-test.v")
	cmd.Env = append(os.Environ(), "ONNXRL_TEST_NO_DRIVER_CHILD=1", "ONNXRL_CUDA_DRIVER_LIBRARY=/nonexistent/libcuda.so.1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "--- PASS: TestNativeCUDANoDriver")
	assert.NotContains(t, string(out), "SKIP")
}
