package main

import (
	"bytes"
	"encoding/json"
	"github.com/onnxrl/sampler/envrunner/runspec"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/inference"
)

// TestMain lets tests run the real main in a child process (SAMPLE_TEST_MAIN=1), for the
// paths that depend on the process environment (the runtime library look-up).
func TestMain(m *testing.M) {
	if os.Getenv("SAMPLE_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func needRuntime(t *testing.T) {
	t.Helper()
	if err := inference.Init(); err != nil {
		t.Skipf("ONNX Runtime not available (run `make onnxruntime`): %v", err)
	}
}

func TestInspect(t *testing.T) {
	code, out, errs := runCLI("inspect", "lstm_policy")
	require.Equal(t, 0, code, errs)
	for _, want := range []string{"state_in_0", "float32", "[1,batch,32]", "1 (batch)", "state[1]", "state_in_1 -> state_out_1", "categorical", "Discrete(2)"} {
		assert.Contains(t, out, want)
	}

	code, out, errs = runCLI("inspect", "--json", "../../models/gru_policy.onnx")
	require.Equal(t, 0, code, errs)
	var j inspectJSON
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.Equal(t, "h_in", j.Inputs[1].Name)
	assert.Equal(t, []int{1}, j.Inputs[1].Dynamic)
	assert.Equal(t, []string{"", "batch", ""}, j.Inputs[1].DimNames)
	assert.Equal(t, "vf", j.Spec.ValueOutput)
	assert.Contains(t, j.Source, "gru_policy.policy.json")
	assert.NotEmpty(t, j.Decisions)

	code, out, _ = runCLI("inspect", "--list")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "cartpole_mlp\n")
}

func TestInfer(t *testing.T) {
	needRuntime(t)
	code, out, errs := runCLI("infer", "--model", "cartpole_mlp", "--input", "testdata/cartpole_obs.json")
	require.Equal(t, 0, code, errs)
	var res struct {
		Outputs map[string]struct {
			Shape []int64   `json:"shape"`
			Data  []float64 `json:"data"`
		} `json:"outputs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, []int64{2, 2}, res.Outputs["logits"].Shape)
	assert.Len(t, res.Outputs["logits"].Data, 4)
	assert.Equal(t, []int64{2}, res.Outputs["value"].Shape)

	// The same numbers as the Go API.
	sess := newTestSession(t, "cartpole_mlp")
	got, err := sess.Infer(map[string]inference.Data{"obs": {Shape: []int64{2, 4}, Values: []float64{0.01, -0.02, 0.03, 0.04, 0.5, 1.0, -0.1, -1.5}}})
	require.NoError(t, err)
	for i, v := range got["logits"].Values {
		assert.InDelta(t, v, res.Outputs["logits"].Data[i], 1e-6)
	}
}

func newTestSession(t *testing.T, name string) *inference.Session {
	p, err := runspec.OpenPolicy(name, inference.DefaultMaxModelBytes)
	require.NoError(t, err)
	s, err := inference.NewSession(p.Model, inference.Options{Capacity: 4})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestBadInput(t *testing.T) {
	needRuntime(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	garbage := write("garbage.onnx", "not a model")
	good := "testdata/cartpole_obs.json"
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no command", nil, 2, "usage"},
		{"unknown command", []string{"frobnicate"}, 2, "unknown command"},
		{"unknown flag", []string{"infer", "--modle", "x"}, 2, "unknown flag --modle; did you mean --model?"},
		{"missing flags", []string{"infer", "--model", "cartpole_mlp"}, 2, "--model and --input are required"},
		{"bad device", []string{"infer", "--model", "cartpole_mlp", "--input", good, "--device", "gpu"}, 2, `unknown device "gpu"`},
		{"missing model", []string{"infer", "--model", "nope", "--input", good}, 1, "no bundled model of that name"},
		{"garbage model", []string{"infer", "--model", garbage, "--input", good}, 1, "not an ONNX model"},
		{"inspect garbage", []string{"inspect", garbage}, 1, "not an ONNX model"},
		{"inspect two", []string{"inspect", "a", "b"}, 2, "exactly one MODEL"},
		{"missing input file", []string{"infer", "--model", "cartpole_mlp", "--input", filepath.Join(dir, "none.json")}, 1, "no such file"},
		{"bad json", []string{"infer", "--model", "cartpole_mlp", "--input", write("a.json", `{"inputs": `)}, 1, "invalid JSON"},
		{"unknown field", []string{"infer", "--model", "cartpole_mlp", "--input", write("b.json", `{"input": {}}`)}, 1, `unknown field "input"`},
		{"no inputs", []string{"infer", "--model", "cartpole_mlp", "--input", write("c.json", `{"inputs": {}}`)}, 1, "no inputs"},
		{"data length", []string{"infer", "--model", "cartpole_mlp", "--input", write("d.json", `{"inputs": {"obs": {"shape": [1, 4], "data": [1, 2]}}}`)}, 1, "holds 4 values, but data has 2"},
		{"unknown input", []string{"infer", "--model", "cartpole_mlp", "--input", write("e.json", `{"inputs": {"x": {"shape": [1], "data": [1]}}}`)}, 1, `no input "x"`},
		{"shape", []string{"infer", "--model", "cartpole_mlp", "--input", write("f.json", `{"inputs": {"obs": {"shape": [1, 5], "data": [1, 2, 3, 4, 5]}}}`)}, 1, "does not match the expected [batch,4]"},
		{"not a number", []string{"infer", "--model", "cartpole_mlp", "--input", write("g.json", `{"inputs": {"obs": {"shape": [1, 4], "data": [1, 2, 3, "x"]}}}`)}, 1, "not a number"},
		{"negative dim", []string{"infer", "--model", "cartpole_mlp", "--input", write("h.json", `{"inputs": {"obs": {"shape": [-1, 4], "data": []}}}`)}, 1, "invalid dimension"},
	}
	for _, c := range cases {
		code, _, errs := runCLI(c.args...)
		assert.Equal(t, c.code, code, c.name)
		assert.Contains(t, errs, c.msg, c.name)
		if c.code == 1 {
			assert.Equal(t, 1, strings.Count(errs, "\n"), "%s: one line: %q", c.name, errs)
		}
		assert.NotContains(t, errs, "goroutine", c.name)
	}
}

// With no runtime library to be found, infer fails with one line that names the paths tried
// and the command that installs the runtime.
func TestMissingRuntime(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	missing := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	cmd := exec.Command(exe, "infer", "--model", "cartpole_mlp", "--input", "testdata/cartpole_obs.json")
	cmd.Env = append(os.Environ(), "SAMPLE_TEST_MAIN=1", inference.LibraryEnv+"="+missing)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 1, ee.ExitCode())
	msg := stderr.String()
	assert.Equal(t, 1, strings.Count(msg, "\n"), msg)
	assert.Contains(t, msg, missing)
	assert.Contains(t, msg, "make onnxruntime")
	assert.NotContains(t, msg, "panic")
}
