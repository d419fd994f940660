package main

import (
	"bytes"
	"encoding/csv"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/internal/bench"
)

// TestBenchTinyMatrix: a tiny matrix writes report.md with a row per configuration,
// results.csv with a row per run, and PNG plots that decode.
func TestBenchTinyMatrix(t *testing.T) {
	needRuntime(t)
	dir := filepath.Join(t.TempDir(), "out")
	code, out, errs := runCLI("bench", "--envs", "CartPole-v1", "--num-envs", "1,4", "--workers", "1,2",
		"--repeats", "2", "--warmup", "0s", "--duration", "50ms", "--fragment-length", "10", "--out", dir)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, errs, "[3/3] CartPole-v1 cartpole_mlp cpu envs=4 workers=2: ", "progress on stderr")
	for _, name := range []string{"results.csv", "report.md", "throughput.png", "breakdown.png"} {
		assert.Contains(t, out, filepath.Join(dir, name), "stdout lists the files")
	}

	fh, err := os.Open(filepath.Join(dir, "results.csv"))
	require.NoError(t, err)
	rows, err := csv.NewReader(fh).ReadAll()
	fh.Close()
	require.NoError(t, err)
	require.Len(t, rows, 1+3*2, "header, then 3 configurations (1 env with 2 workers is skipped) x 2 repeats")
	assert.Equal(t, bench.CSVHeader, rows[0])
	for _, r := range rows[1:] {
		sps, err := strconv.ParseFloat(r[10], 64)
		require.NoError(t, err)
		assert.Greater(t, sps, 100.0, "steps/s %v", r)
		steps, err := strconv.ParseInt(r[7], 10, 64)
		require.NoError(t, err)
		assert.Positive(t, steps)
		inf, err := strconv.ParseFloat(r[13], 64)
		require.NoError(t, err)
		assert.Positive(t, inf, "inference µs per step")
	}

	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	for _, want := range []string{"| CartPole-v1 | cartpole_mlp | cpu | 1 | 1 | ", "| CartPole-v1 | cartpole_mlp | cpu | 4 | 2 | ",
		"| CartPole-v1 | cartpole_mlp | cpu | 1 | 2 | skipped: 2 workers need at least 2 sub-environments", "`sample bench --envs CartPole-v1",
		"| CartPole-v1 cartpole_mlp cpu envs=4 workers=1 | ", "![breakdown](breakdown.png)"} {
		assert.Contains(t, string(md), want)
	}
	for _, name := range []string{"throughput.png", "breakdown.png"} {
		fh, err := os.Open(filepath.Join(dir, name))
		require.NoError(t, err)
		_, err = png.Decode(fh)
		fh.Close()
		assert.NoError(t, err, name)
	}
}

// TestBenchBadSettings: bad settings fail before any run, with a short message, and
// create nothing.
func TestBenchBadSettings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--envs", "CartPol-v1"}, "did you mean CartPole-v1?"},
		{[]string{"--num-envs", "0"}, `--num-envs: "0" is not a count >= 1`},
		{[]string{"--workers", "1,x"}, `--workers: "x" is not a count`},
		{[]string{"--repeats", "0"}, "--repeats 0"},
		{[]string{"--duration", "0s"}, "--duration 0s"},
		{[]string{"--device", "tpu"}, "--device"},
		{[]string{"--envs", "Acrobot-v1"}, "no bundled policy for Acrobot-v1"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		code, _, errs := runCLI(append([]string{"bench", "--out", dir}, tc.args...)...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, errs)
		assert.Contains(t, errs, tc.want, tc.args)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(errs), "\n")+1, "one line: %s", errs)
	}
	needRuntime(t)
	code, _, errs := runCLI("bench", "--out", dir, "--models", "no_such_model")
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "no_such_model")
	code, _, errs = runCLI("bench", "--out", dir, "--envs", "Pendulum-v1", "--models", "cartpole_mlp")
	assert.NotEqual(t, 0, code, "a policy whose spaces do not fit the env: %s", errs)
	assert.NoDirExists(t, dir, "nothing ran")
}

// TestBenchVs: the other sampler's runs alternate with ours and the report has the ratio;
// a sampler that declines a configuration gives n/a; one that fails stops the bench with
// its stderr in the message.
func TestBenchVs(t *testing.T) {
	needRuntime(t)
	dir := t.TempDir()
	// The command sees the settings as flags; this one writes them down for the test.
	argsFile := filepath.Join(dir, "args")
	vs := `printf '%s\n' "$@" > ` + argsFile + `; echo progress; echo '{"steps_per_sec": 1000, "env_steps": 50, "seconds": 0.05}'; true`
	code, _, errs := runCLI("bench", "--envs", "CartPole-v1", "--num-envs", "2", "--workers", "1", "--repeats", "2",
		"--warmup", "0s", "--duration", "30ms", "--out", dir, "--vs", vs, "--vs-name", "fake")
	require.Equal(t, 0, code, errs)
	args, err := os.ReadFile(argsFile)
	require.NoError(t, err)
	assert.Contains(t, string(args), "--env\nCartPole-v1\n--model\n")
	assert.Contains(t, string(args), "cartpole_mlp.onnx\n--num-envs\n2\n--workers\n1\n--device\ncpu\n")
	assert.Contains(t, string(args), "--duration\n0.03\n--fragment-length\n200\n")
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| 1k (1k-1k) | ")
	assert.Contains(t, string(md), "ratio ours/fake")
	fh, err := os.Open(filepath.Join(dir, "results.csv"))
	require.NoError(t, err)
	rows, err := csv.NewReader(fh).ReadAll()
	fh.Close()
	require.NoError(t, err)
	require.Len(t, rows, 1+4)
	assert.Equal(t, []string{"ours", "1"}, rows[1][5:7])
	assert.Equal(t, []string{"vs", "1"}, rows[2][5:7], "alternating, pair by pair")
	assert.Equal(t, []string{"ours", "2"}, rows[3][5:7])

	code, _, errs = runCLI("bench", "--envs", "CartPole-v1", "--num-envs", "2", "--workers", "1", "--repeats", "1",
		"--warmup", "0s", "--duration", "30ms", "--out", dir, "--vs", `echo '{"skipped": "only CartPole"}'; true`)
	require.Equal(t, 0, code, errs)
	md, err = os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "n/a (only CartPole)")

	code, _, errs = runCLI("bench", "--envs", "CartPole-v1", "--num-envs", "2", "--workers", "1", "--repeats", "1",
		"--warmup", "0s", "--duration", "30ms", "--out", dir, "--vs", `echo boom >&2; exit 3; true`)
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "exit status 3; its stderr: boom")

	code, _, errs = runCLI("bench", "--envs", "CartPole-v1", "--num-envs", "2", "--workers", "1", "--repeats", "1",
		"--warmup", "0s", "--duration", "30ms", "--out", dir, "--vs", `echo '{}'; true`)
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "no positive steps_per_sec")
}

// TestBenchInterrupt: SIGINT stops the bench after the current run; what was measured is
// written and the exit status is 130.
func TestBenchInterrupt(t *testing.T) {
	needRuntime(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "bench", "--envs", "CartPole-v1", "--num-envs", "1,2,3,4", "--workers", "1",
		"--repeats", "50", "--warmup", "0s", "--duration", "100ms", "--out", dir)
	cmd.Env = append(os.Environ(), "SAMPLE_TEST_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	time.Sleep(1500 * time.Millisecond) // into the first configuration's repeats
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	err := cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, stderr.String())
	assert.Equal(t, 130, exit.ExitCode(), stderr.String())
	assert.Contains(t, stderr.String(), "interrupted")
	fh, err := os.Open(filepath.Join(dir, "results.csv"))
	require.NoError(t, err, stderr.String())
	rows, err := csv.NewReader(fh).ReadAll()
	fh.Close()
	require.NoError(t, err)
	assert.Greater(t, len(rows), 1, "the runs measured before the signal")
	assert.Less(t, len(rows), 1+4*50, "not every run")
	assert.FileExists(t, filepath.Join(dir, "report.md"))
}
