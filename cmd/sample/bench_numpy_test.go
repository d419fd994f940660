package main

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// numpyPython returns a Python interpreter with NumPy (Debian's /usr/bin/python3 first: the
// python3 first on PATH may be another one without it), or skips.
func numpyPython(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import numpy").Run() == nil {
			return p
		}
	}
	t.Skip("no python3 with NumPy (Debian: apt-get install python3-numpy)")
	return ""
}

// TestNumpyEvaluator: onnx_numpy.py computes the bundled MLP's outputs as ONNX Runtime does.
func TestNumpyEvaluator(t *testing.T) {
	py := numpyPython(t)
	needRuntime(t)
	rng := rand.New(rand.NewPCG(1, 2))
	obs := make([]float64, 5*4)
	for i := range obs {
		obs[i] = rng.Float64()*4 - 2
	}
	in, err := json.Marshal(map[string]any{"inputs": map[string]any{"obs": map[string]any{"shape": []int{5, 4}, "data": obs}}})
	require.NoError(t, err)
	dir := t.TempDir()
	inPath := filepath.Join(dir, "in.json")
	require.NoError(t, os.WriteFile(inPath, in, 0o644))
	code, out, errs := runCLI("infer", "--model", "cartpole_mlp", "--input", inPath)
	require.Equal(t, 0, code, errs)
	var ours struct {
		Outputs map[string]struct{ Data []float64 } `json:"outputs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &ours))

	script := `import json, sys
import numpy as np
sys.path.insert(0, "../../benchmarks/baselines")
import onnx_numpy
m = onnx_numpy.Model.load("../../models/cartpole_mlp.onnx")
obs = np.array(json.load(open(sys.argv[1]))["inputs"]["obs"]["data"], dtype=np.float32).reshape(5, 4)
print(json.dumps({k: v.astype(float).ravel().tolist() for k, v in m.run({"obs": obs}).items()}))`
	b, err := exec.Command(py, "-c", script, inPath).CombinedOutput()
	require.NoError(t, err, string(b))
	var theirs map[string][]float64
	require.NoError(t, json.Unmarshal(b, &theirs), string(b))
	for _, name := range []string{"logits", "value"} {
		require.Len(t, theirs[name], len(ours.Outputs[name].Data), name)
		for i, v := range ours.Outputs[name].Data {
			assert.InDelta(t, v, theirs[name][i], 1e-3*(1+math.Abs(v)), "%s[%d]", name, i)
		}
	}
}

// TestNumpySampler: the reference sampler is a working CartPole sampler (the bundled policy,
// greedy, keeps the pole up for all 500 steps), follows the --vs protocol, and sample bench
// reports the ratio against it.
func TestNumpySampler(t *testing.T) {
	py := numpyPython(t)
	script := "../../benchmarks/baselines/numpy_sampler.py"
	out, err := exec.Command(py, script, "--env", "CartPole-v1", "--model", "../../models/cartpole_mlp.onnx", "--num-envs", "8",
		"--explore", "false", "--warmup", "0", "--duration", "1.5").Output()
	require.NoError(t, err)
	var res struct {
		StepsPerSec float64  `json:"steps_per_sec"`
		EnvSteps    int64    `json:"env_steps"`
		Episodes    int      `json:"episodes"`
		ReturnMean  *float64 `json:"episode_return_mean"`
		Skipped     string   `json:"skipped"`
	}
	require.NoError(t, json.Unmarshal(out, &res), string(out))
	assert.Positive(t, res.StepsPerSec)
	if res.Episodes > 0 {
		assert.Equal(t, 500.0, *res.ReturnMean, "the trained policy, greedy, balances for the whole episode")
	}
	out, err = exec.Command(py, script, "--env", "Pendulum-v1", "--model", "random").Output()
	require.NoError(t, err)
	assert.Contains(t, string(out), `"skipped"`)

	needRuntime(t)
	dir := t.TempDir()
	code, _, errs := runCLI("bench", "--envs", "CartPole-v1,Pendulum-v1", "--num-envs", "16", "--workers", "1", "--repeats", "2",
		"--warmup", "0s", "--duration", "100ms", "--out", dir, "--vs", py+" "+script)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, errs, "numpy_sampler ")
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "ratio ours/numpy_sampler")
	assert.Contains(t, string(md), "n/a (the NumPy sampler has CartPole-v1 only)")
	assert.Equal(t, 1, strings.Count(string(md), "x ("), "one ratio: CartPole-v1's\n%s", md)
}
