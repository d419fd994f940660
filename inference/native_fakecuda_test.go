package inference

import (
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fake CUDA driver (ep/tests/fakecuda, built by `make native`): the driver API and NVRTC
// emulated on the host, running the backend's kernels compiled as host C++.
const fakeCUDALibrary = "build/lib/libonnxrl_fakecuda.so"

// fakeCUDAChildEnv names what a child process of TestNativeCUDAOnFakeDriver checks.
const fakeCUDAChildEnv = "ONNXRL_TEST_FAKECUDA_CHILD"

// fakeCUDAWantEnv carries, to an "error" child, the text its session error must contain.
const fakeCUDAWantEnv = "ONNXRL_TEST_FAKECUDA_WANT"

// fakeCUDABatches are small: the kernels run one block at a time on one CPU thread, and
// `make test` runs the children race-built.
var fakeCUDABatches = []int{1, 7, 256}

// fakeCUDAModels are the models the child processes with other settings run.
var fakeCUDAModels = []string{"../models/cartpole_mlp.onnx", "../models/lstm_policy.onnx"}

// fakeCUDAPath finds the fake driver: beside the provider library NativeLibraryEnv names (a
// build folder other than build/), or the project's build/lib; "" when neither has one.
func fakeCUDAPath() string {
	var dirs []string
	if p := os.Getenv(NativeLibraryEnv); p != "" {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, root := range projectRoots() {
		dirs = append(dirs, filepath.Join(root, filepath.Dir(fakeCUDALibrary)))
	}
	for _, d := range dirs {
		if p := filepath.Join(d, filepath.Base(fakeCUDALibrary)); fileExists(p) {
			return p
		}
	}
	return ""
}

// TestNativeCUDAOnFakeDriver runs the CUDA backend (native:cuda:0) on the CPU, in child
// processes whose driver and NVRTC are the fake driver: every bundled model and every graph
// of testdata/native against the CPU provider, graphs replayed on each batch's second run,
// once with the work on the stream run as it is issued and once deferred to the stream's
// synchronization (a result read too early shows); two models with graphs off, with direct
// copies, and profiled; and running out of device memory, which fails the session with the
// backend's error and nothing worse. The fake driver prints a line starting "onnxrl fakecuda: "
// for every call the real driver would refuse; there must be none.
func TestNativeCUDAOnFakeDriver(t *testing.T) {
	if mode := os.Getenv(fakeCUDAChildEnv); mode != "" {
		fakeCUDAChild(t, mode)
		return
	}
	needNative(t)
	lib := fakeCUDAPath()
	if lib == "" {
		t.Skipf("%s is not built (run `make native`)", fakeCUDALibrary)
	}
	t.Logf("fake driver: %s", lib)
	for _, c := range []struct {
		name, mode string
		env        []string
	}{
		{"models", "models", nil},
		{"models-deferred", "models", []string{"ONNXRL_FAKECUDA_DEFER=1"}},
		{"models-strict", "models", []string{"ONNXRL_FAKECUDA_DEFER=2"}},
		{"models-unpinned", "models", []string{"ONNXRL_CUDA_PIN=0", "ONNXRL_FAKECUDA_DEFER=2"}},
		{"graphs=0", "some", []string{"ONNXRL_CUDA_GRAPHS=0"}},
		{"overlap=0", "models", []string{"ONNXRL_CUDA_OVERLAP=0", "ONNXRL_FAKECUDA_DEFER=1"}},
		{"direct", "some", []string{"ONNXRL_CUDA_DIRECT_BYTES=0"}},
		{"profile", "some", []string{"ONNXRL_CUDA_PROFILE=1"}},
		{"out-of-memory", "oom", []string{"ONNXRL_FAKECUDA_MEM_LIMIT=4096"}},
		{"large-deferred", "large", []string{"ONNXRL_FAKECUDA_DEFER=1"}},
		{"large-unpinned-deferred", "large", []string{"ONNXRL_CUDA_PIN=0", "ONNXRL_FAKECUDA_DEFER=1"}},
		{"pinned-mixed-deferred", "mixed", []string{"ONNXRL_FAKECUDA_DEFER=1"}},
		{"no-gpu", "error", []string{"ONNXRL_FAKECUDA_DEVICES=0", fakeCUDAWantEnv + "=no CUDA GPU found (cuInit: CUDA_ERROR_NO_DEVICE"}},
		{"old-driver", "error", []string{"ONNXRL_FAKECUDA_DRIVER_VERSION=12000",
			fakeCUDAWantEnv + "=the driver is too old for the NVRTC found: it supports CUDA 12.0, NVRTC is"}},
		{"compile-error", "error", []string{"ONNXRL_FAKECUDA_COMPILE_ERROR=onnxrl_gemm: error: planted",
			fakeCUDAWantEnv + "=failed to compile the kernels for sm_90"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run", "^TestNativeCUDAOnFakeDriver$", "-test.v", "-test.count=1")
			for _, kv := range os.Environ() {
				name, _, _ := strings.Cut(kv, "=")
				switch name {
				case "ONNXRL_CUDA_GRAPHS", "ONNXRL_CUDA_DIRECT_BYTES", "ONNXRL_CUDA_PROFILE", "ONNXRL_CUDA_PIN", "ONNXRL_CUDA_OVERLAP", "ONNXRL_FAKECUDA_MEM_LIMIT",
					"ONNXRL_FAKECUDA_DEFER", "ONNXRL_FAKECUDA_DEVICES", "ONNXRL_FAKECUDA_DRIVER_VERSION",
					"ONNXRL_FAKECUDA_COMPILE_ERROR", fakeCUDAWantEnv:
					continue
				}
				cmd.Env = append(cmd.Env, kv)
			}
			cmd.Env = append(cmd.Env, fakeCUDAChildEnv+"="+c.mode, "ONNXRL_CUDA_DRIVER_LIBRARY="+lib,
				"ONNXRL_NVRTC_LIBRARY="+lib, "ONNXRL_CUDA_CACHE="+t.TempDir())
			cmd.Env = append(cmd.Env, c.env...)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			assert.Contains(t, string(out), "--- PASS: TestNativeCUDAOnFakeDriver")
			assert.NotContains(t, string(out), "--- SKIP")
			assert.NotContains(t, string(out), "onnxrl fakecuda: ", "the fake driver refused a call:\n%s", out)
			if c.name == "profile" {
				// The inputs and outputs of the runs at batch 7 and 256 were copied straight from
				// the sessions' pinned tensors (the probes at batch 1 and 2, made before the session
				// exists, use buffers of their own).
				prof := regexp.MustCompile(`\[2,(?:7|256),[0-9,]*\] \w+ copies \(([0-9]+)\.0 of ([0-9]+) tensors pinned\)`).
					FindAllStringSubmatch(string(out), -1)
				require.Len(t, prof, 4, "profile lines of the two models at batch 7 and 256:\n%s", out)
				for _, m := range prof {
					assert.Equal(t, m[2], m[1], "tensors pinned: %s", m[0])
				}
			}
		})
	}
}

func fakeCUDAChild(t *testing.T, mode string) {
	needNative(t)
	switch mode {
	case "models":
		bundled, _ := filepath.Glob("../models/*.onnx")
		graphs, _ := filepath.Glob("testdata/native/*.onnx")
		require.NotEmpty(t, bundled)
		require.NotEmpty(t, graphs)
		for _, p := range append(bundled, graphs...) {
			t.Run(filepath.Base(p), func(t *testing.T) { fakeCUDAMatch(t, p) })
		}
	case "some":
		for _, p := range fakeCUDAModels {
			t.Run(filepath.Base(p), func(t *testing.T) { fakeCUDAMatch(t, p) })
		}
	case "large":
		// Outputs of several 256 KiB chunks: staged through the pinned buffers chunk by chunk,
		// each chunk copied out after its own event (deferred: a chunk read early is stale).
		m, err := LoadFile("../models/lstm_policy.onnx")
		require.NoError(t, err)
		matchOn(t, m, "native:cuda:0", []int{2600})
	case "mixed":
		// Every tensor pinned (the graph holds the copies), then some not (as when pinning
		// fails part way): the graph is captured again without them, and each tensor is copied
		// its own way, the staged outputs chunk by chunk after their events, the straight
		// ones waited for too (deferred: an output read early is stale).
		m, err := LoadFile("../models/lstm_policy.onnx")
		require.NoError(t, err)
		const n = 2600
		cpu, err := NewSession(m, Options{Capacity: n, IntraOpThreads: 1})
		require.NoError(t, err)
		defer cpu.Close()
		nat, err := NewSession(m, Options{Device: "native:cuda:0", Capacity: n})
		require.NoError(t, err)
		defer nat.Close()
		all := append(slices.Clone(nat.inputs), nat.outputs...)
		require.Len(t, nat.pins.starts, len(all), "every tensor pinned")
		rng := rand.New(rand.NewSource(1))
		require.NoError(t, cpu.SetBatch(n))
		require.NoError(t, nat.SetBatch(n))
		runs := func(what string) {
			for rep := 0; rep < 3; rep++ {
				fillInputs(t, rng, cpu, nat)
				require.NoError(t, cpu.Run())
				require.NoError(t, nat.Run())
				compareOutputs(t, "lstm_policy, "+what, cpu, nat)
			}
		}
		runs("every tensor pinned")
		for i, tn := range all {
			require.Zero(t, uintptr(unsafe.Pointer(&tn.pinBuf[0]))%pageSize, "%s is page-aligned", tn.Info.Name)
			if i%2 == 0 {
				unpinTensor(t, nat, tn)
			}
		}
		// A range overlapping a pinned one is refused with the reason.
		refused := &pinSet{}
		err = refused.pin(0, all[1].pinBuf)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "overlaps one already pinned")
		// The set is dropped unreleased, its Pinner still holding the buffer, as a session's is
		// when it is never closed: the package keeps it (heldPins), where the Go runtime would
		// end the process from the Pinner's finalizer once it is collected.
		refused = nil
		runtime.GC()
		runtime.GC()
		time.Sleep(20 * time.Millisecond) // the finalizers' goroutine runs
		runs("half the tensors pinned")
		// Close unpins the rest: the buffers can be pinned again.
		bufs := make([][]byte, len(all))
		for i, tn := range all {
			bufs[i] = tn.pinBuf
		}
		require.NoError(t, nat.Close())
		again := &pinSet{}
		for _, b := range bufs {
			require.NoError(t, again.pin(0, b))
		}
		require.NoError(t, again.release())
	case "error":
		// A session on native:cuda:0 fails with the error that names what is wrong (and the
		// compile failure carries NVRTC's log); never a silent fallback to the host backend.
		m, err := LoadFile("../models/cartpole_mlp.onnx")
		require.NoError(t, err)
		s, err := NewSession(m, Options{Device: "native:cuda:0"})
		if err == nil {
			s.Close()
			t.Fatal("native:cuda:0 opened")
		}
		t.Logf("error: %v", err)
		assert.Contains(t, err.Error(), os.Getenv(fakeCUDAWantEnv))
		if want := os.Getenv("ONNXRL_FAKECUDA_COMPILE_ERROR"); want != "" {
			assert.Contains(t, err.Error(), want)
		}
	case "oom":
		m, err := LoadFile("../models/cartpole_mlp.onnx")
		require.NoError(t, err)
		// The constants go up when the session opens, the weights and buffers at the first run:
		// either fails.
		s, err := NewSession(m, Options{Device: "native:cuda:0", Capacity: 256})
		if err == nil {
			defer s.Close()
			require.NoError(t, s.SetBatch(256))
			fillInputs(t, rand.New(rand.NewSource(1)), s, s)
			err = s.Run()
			require.Error(t, err, "a run within 4096 bytes of device memory")
			again := s.Run()
			require.Error(t, again, "the second run")
			assert.Contains(t, again.Error(), "out of GPU memory")
		}
		require.Error(t, err)
		t.Logf("error: %v", err)
		assert.Contains(t, err.Error(), "out of GPU memory")
	default:
		t.Fatalf("%s=%q: unknown", fakeCUDAChildEnv, mode)
	}
}

// unpinTensor unpins one of s's tensors, as if pinning it had failed.
func unpinTensor(t *testing.T, s *Session, tn *Tensor) {
	p := unsafe.Pointer(&tn.pinBuf[0])
	i := slices.Index(s.pins.starts, p)
	require.GreaterOrEqual(t, i, 0, "%s is pinned", tn.Info.Name)
	one := &pinSet{starts: []unsafe.Pointer{p}}
	require.NoError(t, one.release())
	s.pins.starts = slices.Delete(s.pins.starts, i, i+1)
}

func fakeCUDAMatch(t *testing.T, path string) {
	m, err := LoadFile(path)
	require.NoError(t, err)
	subs := matchOn(t, m, "native:cuda:0", fakeCUDABatches)
	assert.NotEmpty(t, nodesOn(subs, NativeProvider))
	assert.Empty(t, nodesOn(subs, "CPUExecutionProvider"), "nodes left on the CPU provider")
}
