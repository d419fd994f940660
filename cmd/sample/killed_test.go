package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/output"
)

// rowsIn reads files with the package's readers and returns their rows.
func rowsIn(t *testing.T, files []string) int64 {
	t.Helper()
	var rows int64
	for _, f := range files {
		require.NoError(t, output.ReadFile(f, output.FormatAuto, func(m *envrunner.MultiAgentBatch) error {
			rows += int64(m.Rows())
			return nil
		}))
	}
	return rows
}

// TestRunKilledConvert is the issue's reproduction: a SIGKILL during `sample run --out
// x.parquet` left the open file without its footer and `sample convert` over the set failed.
// Now the open file is x-00000N.parquet.partial, complete files are closed at least every
// --flush-interval, and convert over every file of the set (the .partial one included, as a
// glob gives it) converts the complete ones, says which it skipped, and counts their rows.
func TestRunKilledConvert(t *testing.T) {
	needRuntime(t)
	for _, ext := range []string{".parquet", ".jsonl"} {
		t.Run(ext, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "k"+ext)
			cmd := exec.Command(os.Args[0], "run", "--num-envs", "4", "--steps", "2000000000", "--out", out,
				"--max-file-size", "256KiB", "--flush-interval", "100ms")
			cmd.Env = append(os.Environ(), "SAMPLE_TEST_MAIN=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			deadline := time.Now().Add(60 * time.Second)
			for len(completeFiles(out)) < 3 {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("fewer than 3 complete files after 60s; stderr: %s", stderr.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			cmd.Wait()

			complete := completeFiles(out)
			kept := rowsIn(t, complete)
			all, err := filepath.Glob(filepath.Join(dir, "k*"))
			require.NoError(t, err)
			partial := 0
			for _, f := range all {
				if output.IsPartial(f) {
					partial++
				}
			}
			assert.LessOrEqual(t, partial, 1, "at most the open file is incomplete: %v", all)
			conv := filepath.Join(dir, "all"+ext)
			code, stdout, errs := runCLI(append(append([]string{"convert"}, all...), conv)...)
			require.Equal(t, 0, code, errs)
			assert.Contains(t, stdout, fmt.Sprintf(" %d rows", kept))
			assert.Equal(t, partial, strings.Count(errs, "skipping"), errs)
			assert.Equal(t, kept, rowsIn(t, []string{conv}))
			t.Logf("killed: %d complete files with %d rows kept, %d incomplete file skipped", len(complete), kept, partial)
			if ext == ".parquet" {
				// pyarrow reads the set after the kill and the converted file, with checksums.
				out := pyarrowCheck(t, kept, append(all, conv)...)
				t.Logf("%s", out)
			}
		})
	}
}

// TestConvertOverwrite: convert refuses to write over an existing output (and its rotated
// files) unless --overwrite, as run does, and never over one of its own inputs.
func TestConvertOverwrite(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	line := `{"type":"SampleBatch","obs":[[1.0]],"new_obs":[[2.0]],"actions":[0],"rewards":[1.0],"terminateds":[false],"truncateds":[false],"eps_id":[1],"env_id":[0],"agent_index":[0],"t":[0]}` + "\n"
	require.NoError(t, os.WriteFile(in, []byte(line), 0o644))
	out := filepath.Join(dir, "out.parquet")
	code, _, errs := runCLI("convert", in, out)
	require.Equal(t, 0, code, errs)
	before, err := os.ReadFile(out)
	require.NoError(t, err)

	code, _, errs = runCLI("convert", in, out)
	assert.Equal(t, 1, code, errs)
	assert.Contains(t, errs, "--overwrite")
	after, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the refused conversion changed the output")

	// A rotated file of the output's set counts as well, and goes with --overwrite.
	rotated := output.RotatedName(out, 1)
	require.NoError(t, os.WriteFile(rotated, []byte("old"), 0o644))
	code, _, errs = runCLI("convert", "--overwrite", in, out)
	require.Equal(t, 0, code, errs)
	_, err = os.Stat(rotated)
	assert.True(t, os.IsNotExist(err), "the earlier run's rotated file is still there")
	assert.Equal(t, int64(1), rowsIn(t, []string{out}))

	// An input that --overwrite would remove is refused before anything is removed.
	require.NoError(t, os.WriteFile(rotated, after, 0o644))
	code, _, errs = runCLI("convert", "--overwrite", rotated, out)
	assert.Equal(t, 2, code, errs)
	assert.Contains(t, errs, "one of the output")
	for _, f := range []string{out, rotated} {
		_, err = os.Stat(f)
		assert.NoError(t, err)
	}
}

// pyarrowCheck runs scripts/check_parquet.py (pyarrow: schema, row counts, page checksums)
// on files, which must hold rows rows in all but the .partial ones and conv, counted twice:
// the set and its conversion. Skipped without pyarrow (make test installs it).
func pyarrowCheck(t *testing.T, rows int64, files ...string) string {
	t.Helper()
	py := os.Getenv("ONNXRL_PYARROW_PYTHON")
	if py == "" {
		py = filepath.Join("..", "..", "build", "pyarrow-venv", "bin", "python")
		if _, err := os.Stat(py); err != nil {
			t.Skip("no pyarrow: make test installs it in build/pyarrow-venv")
		}
	}
	out, err := exec.Command(py, append([]string{filepath.Join("..", "..", "scripts", "check_parquet.py"), "--rows", fmt.Sprint(2 * rows)}, files...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}
