package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/onnxrl/sampler/envrunner/runspec"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/envrunner/output"
	"github.com/onnxrl/sampler/externalenv/client"
	"github.com/onnxrl/sampler/internal/onnxtest"
	"github.com/onnxrl/sampler/models"
)

// writeLyingModel writes a CartPole-shaped policy that declares a [batch, 2] action output
// but produces [batch, 4] (its logits are its observation).
func writeLyingModel(t *testing.T) string {
	t.Helper()
	data := onnxtest.Model{
		Inputs:  []onnxtest.Value{{Name: "obs", ElemType: onnxtest.Float32, Dims: []int64{-1, 4}, Names: []string{"batch"}}},
		Outputs: []onnxtest.Value{{Name: "logits", ElemType: onnxtest.Float32, Dims: []int64{-1, 2}, Names: []string{"batch"}}},
		Nodes:   []onnxtest.Node{{Op: "Identity", Inputs: []string{"obs"}, Outputs: []string{"logits"}}},
		Metadata: [][2]string{{models.MetadataKey, `{"observation_input":"obs","action_output":"logits","distribution":"categorical",
			"observation_space":` + cartPoleObsSpace + `,"action_space":{"type":"Discrete","n":2}}`}},
	}.Bytes()
	p := filepath.Join(t.TempDir(), "lying.onnx")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return p
}

// The reproduction: a model whose real output shape differs from its declared one
// killed `sample run`, `serve` and /v1/act with a panic in connectors.checkLen, leaving the
// --out file empty. Now each refuses the model at start with one line naming the output.
func TestLyingModel(t *testing.T) {
	needRuntime(t)
	model := writeLyingModel(t)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"run", "--env", "CartPole-v1", "--model", model, "--steps", "100", "--out", filepath.Join(dir, "run.jsonl")},
		{"serve", "--addr", "127.0.0.1:0", "--model", model, "--out", filepath.Join(dir, "serve.jsonl")},
	} {
		code, _, errs := runCLI(args...)
		assert.Equal(t, 1, code, errs)
		assert.Contains(t, errs, `"logits"`)
		assert.Contains(t, errs, "4 values per row")
		assert.NotContains(t, errs, "panic")
		assert.NotContains(t, errs, "goroutine")
	}
}

// The reproduction: a second `sample run --out x.jsonl` left the first run's rotated
// files beside the new ones. It is refused now; --overwrite removes the whole earlier set.
func TestRunRefusesOldOutput(t *testing.T) {
	needRuntime(t)
	p := filepath.Join(t.TempDir(), "x.jsonl")
	args := []string{"--env", "CartPole-v1", "--num-envs", "4", "--steps", "4000", "--out", p, "--max-file-size", "16KiB"}
	s := runJSON(t, args...)
	require.Greater(t, len(s.Out), 2, "rotated files")
	code, _, errs := runCLI(append([]string{"run", "--json"}, args...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "--overwrite")
	assert.Contains(t, errs, "rotated files")

	short := runJSON(t, "--env", "CartPole-v1", "--num-envs", "4", "--steps", "200", "--out", p, "--overwrite")
	require.Len(t, short.Out, 1)
	left, err := filepath.Glob(filepath.Join(filepath.Dir(p), "x*"))
	require.NoError(t, err)
	assert.Equal(t, []string{p}, left, "the earlier rotated files are gone")
	_, err = os.Stat(output.RotatedName(p, 1))
	assert.True(t, os.IsNotExist(err))
}

func TestServeRefusesPublicWithoutToken(t *testing.T) {
	code, _, errs := runCLI("serve", "--addr", "0.0.0.0:0", "--model", "random", "--obs-space", cartPoleObsSpace, "--action-space", cartPoleActSpace)
	assert.Equal(t, 2, code, errs)
	assert.Contains(t, errs, "--token")
	assert.Contains(t, errs, "--insecure")
	for _, extra := range [][]string{{"--insecure"}, {"--token", "x"}} {
		f, err := parseServeFlags(append([]string{"--addr", "0.0.0.0:0"}, extra...), os.Stderr)
		require.NoError(t, err, "%v", extra)
		_ = f
	}
	t.Setenv(tokenEnv, "from-env")
	f, err := parseServeFlags([]string{"--addr", "[::]:0"}, os.Stderr)
	require.NoError(t, err)
	assert.Equal(t, "from-env", f.guard.token)
}

// healthz fetches /healthz and decodes it.
func healthz(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	res, err := http.Get(url + "/healthz")
	require.NoError(t, err)
	defer res.Body.Close()
	var m map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&m))
	return res.StatusCode, m
}

// The reproduction: a full disk shut the server down, its summary counted rows that
// never reached the disk and the error was printed twice. /dev/full fails every write with
// ENOSPC: the server now stays up with /healthz unhealthy and the reason, new episodes get
// 503, the error is printed once and the summary counts only rows confirmed on disk.
func TestServeFullDisk(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	p := startServe(t, "--model", "random", "--obs-space", cartPoleObsSpace, "--action-space", cartPoleActSpace,
		"--out", "/dev/full", "--max-file-size", "0", "--fragment-length", "5", "--flush-interval", "20ms")
	c, err := client.New(p.url, client.Options{})
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var s served
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if code, _ := healthz(t, p.url); code != http.StatusOK {
			break
		}
		// Fails once the sampler has stopped; the loop then sees /healthz fail.
		cartPoleEpisode(ctx, c, fmt.Sprint("full-", s.steps), uint64(s.steps), false, &s)
	}
	code, h := healthz(t, p.url)
	require.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "failing", h["status"])
	assert.Contains(t, h["error"], "no space left")
	_, err = c.StartEpisode(ctx, "", true)
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, http.StatusServiceUnavailable, ce.StatusCode)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	<-p.done
	err = p.cmd.Wait()
	errs := p.stderrText()
	assert.Error(t, err, "a failed run exits non-zero")
	assert.Equal(t, 1, strings.Count(errs, "no space left"), errs)
	assert.Contains(t, errs, "0 rows confirmed on disk")
	assert.NotContains(t, errs, "panic")
}

// With --flush-interval, served steps reach the file while the server runs, long before a
// fragment is complete, so a SIGKILL loses at most the interval's steps.
func TestServeFlushInterval(t *testing.T) {
	out := filepath.Join(t.TempDir(), "served.jsonl")
	p := startServe(t, "--model", "random", "--obs-space", cartPoleObsSpace, "--action-space", cartPoleActSpace,
		"--out", out, "--fragment-length", "100000", "--flush-interval", "50ms")
	c, err := client.New(p.url, client.Options{})
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	ctx := context.Background()
	var s served
	for i := range 3 {
		require.NoError(t, cartPoleEpisode(ctx, c, fmt.Sprint("flush-", i), uint64(i), false, &s))
	}
	time.Sleep(100 * time.Millisecond)
	// One more step after the interval makes the sampler flush what it has.
	id, err := c.StartEpisode(ctx, "", true)
	require.NoError(t, err)
	_, err = c.GetAction(ctx, id, []float32{0, 0, 0, 0})
	require.NoError(t, err)
	// Without the flush interval nothing would reach the file before 100,000 steps.
	require.Eventually(t, func() bool { return rowsWritten(out) >= int64(s.steps) }, 10*time.Second, 10*time.Millisecond,
		"the served steps did not reach the file while the server ran")
	require.NoError(t, p.cmd.Process.Kill())
	<-p.done
	p.cmd.Wait()
	bs := readBatches(t, completeFiles(out))
	assert.GreaterOrEqual(t, rowsOf(bs), int64(s.steps), "every step of the ended episodes survived SIGKILL")
}

// An idle server writes the steps served before its clients went quiet at the flush
// interval, without another step to wake it (Poll returns at the interval: IdlePoll).
func TestServeFlushIntervalIdle(t *testing.T) {
	out := filepath.Join(t.TempDir(), "idle.jsonl")
	p := startServe(t, "--model", "random", "--obs-space", cartPoleObsSpace, "--action-space", cartPoleActSpace,
		"--out", out, "--fragment-length", "100000", "--flush-interval", "50ms")
	c, err := client.New(p.url, client.Options{})
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	var s served
	for i := range 2 {
		require.NoError(t, cartPoleEpisode(context.Background(), c, fmt.Sprint("idle-", i), uint64(i), false, &s))
	}
	// No further request: only the idle Poll lets the sampler flush.
	require.Eventually(t, func() bool { return rowsWritten(out) >= int64(s.steps) }, 10*time.Second, 10*time.Millisecond,
		"the steps served before the server went idle did not reach the file")
	p.stop(t)
}

// The reproduction, scaled: infer read all of 10^8 values (37.6 s, 4.15 GB) before
// a misleading shape error. The model's input [batch, 4] takes at most 4 x 2^20 values: an
// input with more fails at the first value over the limit, saying so.
func TestInferLimitWhileParsing(t *testing.T) {
	needRuntime(t)
	var b strings.Builder
	b.WriteString(`{"inputs": {"obs": {"data": [`)
	n := 4<<20 + 100_000
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('0')
	}
	b.WriteString(`], "shape": [1, 4]}}}`)
	p := filepath.Join(t.TempDir(), "big.json")
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	code, _, errs := runCLI("infer", "--model", "cartpole_mlp", "--input", p)
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "more than 4194304 values")
}

// The reproduction: an observation input of [batch, 2^63-1] panicked in
// spaces.NewBox from `sample inspect`.
func TestInspectHugeDimensions(t *testing.T) {
	data := onnxtest.Model{
		Inputs:  []onnxtest.Value{{Name: "obs", ElemType: onnxtest.Float32, Dims: []int64{-1, 1<<63 - 1}, Names: []string{"batch"}}},
		Outputs: []onnxtest.Value{{Name: "logits", ElemType: onnxtest.Float32, Dims: []int64{-1, 2}, Names: []string{"batch"}}},
		Nodes:   []onnxtest.Node{{Op: "Identity", Inputs: []string{"obs"}, Outputs: []string{"logits"}}},
	}.Bytes()
	p := filepath.Join(t.TempDir(), "huge.onnx")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	code, _, errs := runCLI("inspect", p)
	assert.Equal(t, 1, code, errs)
	assert.Contains(t, errs, "too large")
	assert.NotContains(t, errs, "panic")
}

// rowsWritten counts the rows of the complete lines of a JSON lines sample file.
func rowsWritten(path string) int64 {
	var rows int64
	for _, f := range completeFiles(path) {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				break
			}
			if m, err := output.Decode(b[:i]); err == nil {
				rows += int64(m.Rows())
			}
			b = b[i+1:]
		}
	}
	return rows
}

// completeFiles returns the complete files of path's output set (each flush closes one; the
// .partial file being written is left out).
func completeFiles(path string) []string {
	set, _ := runspec.OutputSet(path)
	var done []string
	for _, f := range set {
		if !output.IsPartial(f) {
			done = append(done, f)
		}
	}
	return done
}
