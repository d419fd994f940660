package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/envrunner"
)

// TestRunStateInPerSequence: --state-in per-sequence writes RLlib's recurrent layout to JSON
// lines (state_in_N a row per seq_lens entry, sequences of at most --max-seq-len rows), and
// is refused for Parquet and --publish, which hold a row per transition.
func TestRunStateInPerSequence(t *testing.T) {
	needRuntime(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "lstm.jsonl")
	s := runJSON(t, "--env", "StatelessCartPole", "--num-envs", "2", "--steps", "400", "--max-seq-len", "5",
		"--state-in", "per-sequence", "--out", p)
	for _, m := range readBatches(t, s.Out) {
		b := m.PolicyBatches[envrunner.DefaultPolicyID]
		require.True(t, b.StatePerSequence)
		require.NoError(t, b.Validate())
		for _, l := range b.SeqLens {
			assert.LessOrEqual(t, l, int32(5))
		}
		require.Len(t, b.StateIn[0], len(b.SeqLens)*b.StateWidths[0])
	}
	for _, args := range [][]string{{"--out", filepath.Join(dir, "x.parquet")}, {"--publish", "nats://127.0.0.1:1"},
		{"--state-in", "per-row-and-more"}, {"--max-seq-len", "0"}} {
		code, _, errs := runCLI(append([]string{"run", "--env", "StatelessCartPole", "--state-in", "per-sequence"}, args...)...)
		assert.Equal(t, 2, code, "%v: %s", args, errs)
	}
}
