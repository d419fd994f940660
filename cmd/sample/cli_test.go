package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/scaleout"
	"github.com/onnxrl/sampler/spaces"
)

// subcommands are the commands as typed, each with a flag set ("runtime" has subcommands).
func subcommands() [][]string {
	var out [][]string
	for _, c := range commands() {
		if c.name == "runtime" {
			out = append(out, []string{"runtime", "install"}, []string{"runtime", "path"})
			continue
		}
		out = append(out, []string{c.name})
	}
	return out
}

// TestFlagErrorsOneLine: a mistyped flag of any command is one line on stderr naming it (with
// the closest flag when one is near), exit status 2, and no usage dump.
func TestFlagErrorsOneLine(t *testing.T) {
	for _, cmd := range subcommands() {
		name := strings.Join(cmd, " ")
		code, out, errs := runCLI(append(cmd, "--frobnicate-xyzzy", "1")...)
		assert.Equal(t, 2, code, name)
		assert.Empty(t, out, name)
		assert.Equal(t, "sample "+cmd[0]+": unknown flag --frobnicate-xyzzy\n", errs, name)
	}
	for _, tc := range []struct{ args []string }{
		{[]string{"run", "--num-env", "4"}},
		{[]string{"run", "-num-env", "4"}},
	} {
		code, _, errs := runCLI(tc.args...)
		assert.Equal(t, 2, code)
		assert.Equal(t, "sample run: unknown flag --num-env; did you mean --num-envs?\n", errs)
	}
	_, _, errs := runCLI("drain", "--idle-exti", "1s")
	assert.Equal(t, "sample drain: unknown flag --idle-exti; did you mean --idle-exit?\n", errs)
	_, _, errs = runCLI("run", "--out")
	assert.Equal(t, "sample run: flag --out needs a value\n", errs)
	code, _, errs := runCLI("rnu")
	assert.Equal(t, 2, code)
	assert.Equal(t, 1, strings.Count(errs, "\n"), "no command list: %q", errs)
}

// TestHelpOnStdout: --help and -h print the usage on stdout and exit 0, for every command and
// for sample itself.
func TestHelpOnStdout(t *testing.T) {
	for _, cmd := range append(subcommands(), nil) {
		for _, h := range []string{"--help", "-h"} {
			args := append(append([]string{}, cmd...), h)
			code, out, errs := runCLI(args...)
			assert.Equal(t, 0, code, "%v: %s", args, errs)
			assert.Empty(t, errs, args)
			assert.True(t, strings.HasPrefix(out, "usage: sample"), "%v: %q", args, out)
		}
	}
	_, out, _ := runCLI("run", "--help")
	assert.Contains(t, out, "-num-envs")
}

// TestOutPathChecks: --out with an extension that names no format is refused unless --format
// says one; an output directory that does not exist is refused, not created.
func TestOutPathChecks(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "x.csv")
	missing := filepath.Join(dir, "nonexistent", "dir")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--out", csv}, 2, "sample run: --out " + csv + ": extension .csv names no output format; name it .parquet (or .pq) for Parquet or .jsonl (or .json) for JSON lines, or give --format parquet|json\n"},
		{[]string{"run", "--out", filepath.Join(dir, "x")}, 2, "has no extension to choose the format by"},
		{[]string{"run", "--out", filepath.Join(missing, "x.parquet")}, 1, "sample run: --out " + filepath.Join(missing, "x.parquet") + ": directory " + missing + " does not exist\n"},
		{[]string{"run", "--out", filepath.Join(missing, "x.csv"), "--format", "json"}, 1, "directory " + missing + " does not exist"},
		{[]string{"serve", "--out", filepath.Join(missing, "x.jsonl")}, 1, "sample serve: --out " + filepath.Join(missing, "x.jsonl") + ": directory " + missing + " does not exist\n"},
		{[]string{"serve", "--out", csv}, 2, "sample serve: --out " + csv + ": extension .csv"},
		{[]string{"drain", "--out", csv}, 2, "sample drain: --out " + csv + ": extension .csv"},
		{[]string{"drain", "--out", filepath.Join(missing, "x.parquet")}, 1, "directory " + missing + " does not exist"},
		{[]string{"convert", "in.jsonl", csv}, 2, "sample convert: output " + csv + ": extension .csv"},
		{[]string{"convert", "in.jsonl", filepath.Join(missing, "x.parquet")}, 1, "directory " + missing + " does not exist"},
	} {
		code, _, errs := runCLI(tc.args...)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, errs)
		assert.Contains(t, errs, tc.want, tc.args)
		assert.Equal(t, 1, strings.Count(errs, "\n"), "%v: one line: %q", tc.args, errs)
	}
	_, err := os.Stat(filepath.Join(dir, "nonexistent"))
	assert.True(t, os.IsNotExist(err), "the directory was created")
	_, err = os.Stat(csv)
	assert.True(t, os.IsNotExist(err), "x.csv was written")
	// What is accepted: a known extension in any case, another with --format, a device.
	for _, args := range [][]string{
		{"--out", filepath.Join(dir, "x.parquet")}, {"--out", filepath.Join(dir, "x.PQ")},
		{"--out", filepath.Join(dir, "x.jsonl")}, {"--out", filepath.Join(dir, "x.json")},
		{"--out", csv, "--format", "json"}, {"--out", filepath.Join(dir, "x"), "--format", "parquet"},
		{"--out", os.DevNull},
	} {
		_, err := parseRunFlags(args, io.Discard)
		assert.NoError(t, err, args)
	}
	s := runJSON(t, "--model", "random", "--steps", "50", "--out", csv, "--format", "json")
	assert.Equal(t, []string{csv}, s.Out)
}

// TestPlural: summaries count in words that agree with the count.
func TestPlural(t *testing.T) {
	assert.Equal(t, "1 worker", plural(1, "worker", "workers"))
	assert.Equal(t, "0 workers", plural(0, "worker", "workers"))
	assert.Equal(t, "3 batches", plural(int64(3), "batch", "batches"))
	code, out, errs := runCLI("run", "--model", "random", "--steps", "20")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "CartPole-v1 (1 sub-environment, 1 worker)")
}

// TestDrainCleanShutdown: a server that shuts down while a drain waits (as sample run
// --publish embedded does once its stream is drained) is no error to retry; the summary
// counts in agreeing words and says what the journal beside the files is.
func TestDrainCleanShutdown(t *testing.T) {
	b, err := scaleout.StartBroker(scaleout.BrokerOptions{StoreDir: t.TempDir()})
	require.NoError(t, err)
	defer b.Close()
	runJSON(t, "--model", "random", "--steps", "100", "--fragment-length", "100", "--publish", b.URL(), "--run", "c")
	out := filepath.Join(t.TempDir(), "x.parquet")
	var stdout, stderr bytes.Buffer
	done := make(chan int)
	go func() {
		done <- run([]string{"drain", "--server", b.URL(), "--run", "c", "--out", out, "--idle-exit", "3s"}, &stdout, &stderr)
	}()
	require.Eventually(t, func() bool { _, err := os.Stat(out); return err == nil }, 20*time.Second, 20*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // the drain waits for more in its next fetch
	b.Close()
	select {
	case code := <-done:
		require.Equal(t, 0, code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the drain did not stop after --idle-exit")
	}
	assert.NotContains(t, stderr.String(), "retrying")
	assert.Contains(t, stderr.String(), "sample drain: the NATS server shut down; waiting for it to come back (--idle-exit: the drain stops once nothing has come for 3s)\n")
	assert.Contains(t, stdout.String(), fmt.Sprintf("drained run c: 1 message, 1 batch, 100 rows, 100 env steps into [%s]\n", out))
	assert.Contains(t, stdout.String(), "journal "+out+".ids: the ids of the messages in these files")
	_, err = os.Stat(out + ".ids")
	assert.NoError(t, err, "the journal stays beside the files")
}

// TestDrainNothingLeavesNoJournal: a drain that wrote nothing leaves no empty journal.
func TestDrainNothingLeavesNoJournal(t *testing.T) {
	b, err := scaleout.StartBroker(scaleout.BrokerOptions{StoreDir: t.TempDir()})
	require.NoError(t, err)
	defer b.Close()
	runJSON(t, "--model", "random", "--steps", "100", "--publish", b.URL(), "--run", "e")
	dir := t.TempDir()
	d := drainJSON(t, "--server", b.URL(), "--run", "e", "--out", filepath.Join(dir, "a.parquet"), "--idle-exit", "300ms")
	require.EqualValues(t, 100, d.Rows)
	out := filepath.Join(dir, "x.parquet")
	d = drainJSON(t, "--server", b.URL(), "--run", "e", "--out", out, "--idle-exit", "300ms")
	assert.Zero(t, d.Rows)
	assert.Empty(t, d.Journal)
	_, err = os.Stat(out + ".ids")
	assert.True(t, os.IsNotExist(err), "an empty journal was left")
}

// TestSpaceTextInf: the text output spells unbounded float32 bounds inf, as --list-envs
// does for the environments; JSON keeps the numbers.
func TestSpaceTextInf(t *testing.T) {
	needRuntime(t)
	code, out, errs := runCLI("inspect", "cartpole_mlp")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "Box([-4.8 -inf -0.41887903 -inf], [4.8 inf 0.41887903 inf], (4,), float32)")
	assert.NotContains(t, out, "e+38")
	_, list, _ := runCLI("run", "--list-envs")
	assert.Contains(t, list, "Box([-4.8 -inf -0.41887903 -inf], [4.8 inf 0.41887903 inf], (4,), float32)")
	code, js, errs := runCLI("inspect", "--json", "cartpole_mlp")
	require.Equal(t, 0, code, errs)
	assert.True(t, json.Valid([]byte(js)))
	assert.Contains(t, js, "3.4028235e+38")
	p, err := models.Open("cartpole_mlp")
	require.NoError(t, err)
	assert.Contains(t, spaces.String(p.Spec.ObservationSpace), "-3.4028235e+38", "the spec itself is unchanged")
}

func TestUnboundedAsInf(t *testing.T) {
	m := float32(math.MaxFloat32)
	s := &spaces.Tuple{Spaces: []spaces.Space{
		spaces.NewDict(map[string]spaces.Space{"a": spaces.NewBoxBounds([]float32{-m, 0}, []float32{1, m})}),
		&spaces.Box{Low: []float32{-m}, High: []float32{m}, Shape: []int{1}, Dtype: "float64"},
	}}
	assert.Equal(t, "Tuple(Dict(a: Box([-inf 0.0], [1.0 inf], (2,), float32)), Box(-3.4028235e+38, 3.4028235e+38, (1,), float64))", spaceText(s))
	assert.Contains(t, spaces.String(s), "-3.4028235e+38 0.0", "the space itself is unchanged")
}
