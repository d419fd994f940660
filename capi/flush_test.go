package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/output"
)

// completeRows counts the rows of the complete (not .partial) Parquet files in dir.
func completeRows(t *testing.T, dir string) (files int, rows int64) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	require.NoError(t, err)
	for _, p := range paths {
		files++
		require.NoError(t, output.ReadParquet(p, func(m *envrunner.MultiAgentBatch) error {
			rows += int64(m.Rows())
			return nil
		}))
	}
	return files, rows
}

// TestEnvFlushInterval: with "flush_interval_ms", the steps of an env whose host went quiet
// are in a complete Parquet file (footer written, renamed from .partial) within the interval,
// while the env is still open, so that a killed host loses at most that window (issue 35:
// the C API's writer had no flush interval; only complete fragments and close wrote).
func TestEnvFlushInterval(t *testing.T) {
	needRuntime(t)
	for _, tc := range []struct {
		ms   int
		want bool
	}{{50, true}, {0, false}} {
		t.Run(fmt.Sprint(tc.ms), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "x.parquet")
			e, err := openEnv("cartpole_mlp", []byte(fmt.Sprintf(`{"explore": false, "max_episodes": 2, "out": %q, "flush_interval_ms": %d}`, out, tc.ms)))
			require.NoError(t, err)
			defer func() { require.NoError(t, e.close()) }()
			id, err := e.start(nil, true)
			require.NoError(t, err)
			obs, act := []float32{0.01, 0, -0.01, 0}, make([]float32, 1)
			const steps = 7
			for range steps {
				require.NoError(t, e.getAction([]byte(id), obs, act))
				require.NoError(t, e.logReturns([]byte(id), 1))
			}
			// The host now calls nothing: only the idle poll can end a step and flush.
			deadline := time.Now().Add(3 * time.Second)
			if !tc.want {
				deadline = time.Now().Add(300 * time.Millisecond)
			}
			var files int
			var rows int64
			for time.Now().Before(deadline) {
				if files, rows = completeRows(t, dir); files > 0 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if !tc.want {
				assert.Zero(t, files, "no complete file before close without a flush interval")
				return
			}
			require.Positive(t, files, "no complete Parquet file %v after the host went quiet", 3*time.Second)
			// The steps acted on and rewarded are there (the last action's row may wait for
			// its next observation).
			assert.GreaterOrEqual(t, rows, int64(steps-1))
		})
	}
}

// TestEnvFlushIntervalRefused: a negative or absurd interval is an error that names it.
func TestEnvFlushIntervalRefused(t *testing.T) {
	for _, v := range []string{"-1", "86400001"} {
		o := defaultEnvOptions()
		err := readOptions([]byte(`{"flush_interval_ms": `+v+`}`), &o)
		assert.ErrorContains(t, err, `"flush_interval_ms" `+v)
	}
}
