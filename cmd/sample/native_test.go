package main

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/inference"
)

// needNative skips when the native provider library is not built (`make test` builds it).
func needNative(t *testing.T) {
	t.Helper()
	needRuntime(t)
	if err := inference.EnsureNative(); err != nil {
		if errors.Is(err, inference.ErrNativeNotFound) {
			t.Skipf("the native provider is not built (run `make native`): %v", err)
		}
		t.Fatal(err)
	}
}

func TestRunNative(t *testing.T) {
	needNative(t)
	s := runJSON(t, "--env", "CartPole-v1", "--device", "native", "--episodes", "100", "--explore=false")
	assert.EqualValues(t, 100, s.Episodes)
	assert.Equal(t, 500.0, s.EpisodeReturnMean, "the trained policy balances every episode")
}

func TestInspectNative(t *testing.T) {
	needNative(t)
	code, out, errs := runCLI("inspect", "--json", "--device", "native", "cartpole_mlp")
	require.Equal(t, 0, code, errs)
	var j inspectJSON
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	require.Len(t, j.Assignment, 1, "%+v", j.Assignment)
	assert.Equal(t, inference.NativeProvider, j.Assignment[0].Provider)
	assert.NotEmpty(t, j.Assignment[0].Nodes)

	// The CNN runs wholly on the provider, its convolutions included (issue 37); a split
	// around an unsupported op is TestNativeSplitsAroundUnsupported's (package inference).
	code, out, errs = runCLI("inspect", "--device", "native", "cnn_policy")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "OnnxrlNative")
	assert.NotContains(t, out, "CPUExecutionProvider")
	assert.Regexp(t, `Conv\s+/conv/conv.0/Conv`, out)

	code, _, errs = runCLI("inspect", "--device", "native:tpu", "cartpole_mlp")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "unknown native backend")
}

func TestInferNative(t *testing.T) {
	needNative(t)
	decode := func(out string) map[string][]float64 {
		var res struct {
			Outputs map[string]struct {
				Data []float64 `json:"data"`
			} `json:"outputs"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		m := map[string][]float64{}
		for k, v := range res.Outputs {
			m[k] = v.Data
		}
		return m
	}
	code, out, errs := runCLI("infer", "--model", "cartpole_mlp", "--input", "testdata/cartpole_obs.json", "--device", "native")
	require.Equal(t, 0, code, errs)
	nat := decode(out)
	code, out, errs = runCLI("infer", "--model", "cartpole_mlp", "--input", "testdata/cartpole_obs.json")
	require.Equal(t, 0, code, errs)
	cpu := decode(out)
	require.Len(t, nat["logits"], 4)
	for k, want := range cpu {
		for i := range want {
			assert.InDelta(t, want[i], nat[k][i], 1e-5*max(1, math.Abs(want[i])), "%s[%d]", k, i)
		}
	}
}

// TestRunCUDANoDriver runs `sample run --device native:cuda:0` in a child process whose driver
// library does not exist: exit status 1 and an error that names the missing library (never a
// silent fallback to the host backend).
func TestRunCUDANoDriver(t *testing.T) {
	if os.Getenv("ONNXRL_TEST_NO_DRIVER_CHILD") == "1" {
		code, _, errs := runCLI("run", "--env", "CartPole-v1", "--num-envs", "2", "--steps", "10", "--device", "native:cuda:0")
		assert.Equal(t, 1, code)
		assert.Contains(t, errs, "the NVIDIA driver library was not found")
		assert.Contains(t, errs, "/nonexistent/libcuda.so.1")
		return
	}
	needRuntime(t)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestRunCUDANoDriver$", "-test.v")
	cmd.Env = append(os.Environ(), "ONNXRL_TEST_NO_DRIVER_CHILD=1", "ONNXRL_CUDA_DRIVER_LIBRARY=/nonexistent/libcuda.so.1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "--- PASS: TestRunCUDANoDriver")
}
