package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/output"
	"github.com/onnxrl/sampler/models"
)

// readAll reads the batches of the files in order.
func readAll(t *testing.T, files []string) []*envrunner.MultiAgentBatch {
	t.Helper()
	var out []*envrunner.MultiAgentBatch
	for _, f := range files {
		require.NoError(t, output.ReadFile(f, output.FormatAuto, func(m *envrunner.MultiAgentBatch) error {
			out = append(out, m)
			return nil
		}))
	}
	return out
}

// TestParquetMatchesJSON: a run written to Parquet (rotated) and read back with the Arrow
// reader has every column of the JSON lines of the same seed, for an MLP, an LSTM, a Gaussian
// and a multi-agent run with GAE columns; the files carry their metadata.
func TestParquetMatchesJSON(t *testing.T) {
	needRuntime(t)
	for _, tc := range []struct{ env, model string }{
		{"CartPole-v1", "cartpole_mlp"}, {"StatelessCartPole", "lstm_policy"},
		{"Pendulum-v1", "pendulum_gaussian"}, {"MultiAgentCartPole", "cartpole_mlp"},
	} {
		t.Run(tc.env, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"--env", tc.env, "--steps", "1500", "--num-envs", "3", "--seed", "9", "--gae", "--max-file-size", "40KiB"}
			pq := runJSON(t, append(args, "--out", filepath.Join(dir, "s.parquet"))...)
			js := runJSON(t, append(args, "--out", filepath.Join(dir, "s.jsonl"))...)
			require.Greater(t, len(pq.Out), 1, "the Parquet output rotates")
			fromPQ, fromJS := readAll(t, pq.Out), readAll(t, js.Out)
			require.Equal(t, len(fromJS), len(fromPQ), "batches")
			require.Equal(t, js.Rows, pq.Rows)
			for i := range fromJS {
				j, p := fromJS[i], fromPQ[i]
				require.Equal(t, j.PolicyIDs(), p.PolicyIDs(), "batch %d", i)
				require.Equal(t, string(output.AppendJSON(nil, j)), string(output.AppendJSON(nil, p)), "batch %d", i)
				for _, id := range j.PolicyIDs() {
					jb, pb := j.PolicyBatches[id], p.PolicyBatches[id]
					for name, cols := range map[string][2]any{
						"obs": {jb.Obs, pb.Obs}, "new_obs": {jb.NewObs, pb.NewObs}, "actions": {jb.Actions, pb.Actions},
						"rewards": {jb.Rewards, pb.Rewards}, "terminateds": {jb.Terminateds, pb.Terminateds},
						"truncateds": {jb.Truncateds, pb.Truncateds}, "eps_id": {jb.EpsID, pb.EpsID},
						"env_id": {jb.EnvID, pb.EnvID}, "agent_index": {jb.AgentIndex, pb.AgentIndex}, "t": {jb.T, pb.T},
						"action_dist_inputs": {jb.ActionDistInputs, pb.ActionDistInputs}, "action_logp": {jb.ActionLogp, pb.ActionLogp},
						"vf_preds": {jb.VfPreds, pb.VfPreds}, "advantages": {jb.Advantages, pb.Advantages},
						"value_targets": {jb.ValueTargets, pb.ValueTargets}, "seq_lens": {jb.SeqLens, pb.SeqLens},
						"state_in": {jb.StateIn, pb.StateIn}, "state_out": {jb.StateOut, pb.StateOut},
					} {
						require.Equal(t, cols[0], cols[1], "batch %d policy %s column %s", i, id, name)
					}
					require.NotEmpty(t, pb.ActionLogp, "the model columns are there")
					require.NotEmpty(t, pb.Advantages, "the GAE columns are there")
				}
			}
			checkParquetFile(t, pq.Out[0], tc.model)
		})
	}
}

// checkParquetFile checks the metadata and the column types of a file of sample run.
func checkParquetFile(t *testing.T, path, model string) {
	t.Helper()
	meta, err := output.ParquetMetadata(path)
	require.NoError(t, err)
	p, err := models.Open(model)
	require.NoError(t, err)
	sum := sha256.Sum256(p.Model.Bytes())
	assert.Equal(t, hex.EncodeToString(sum[:]), meta[output.MetaModelSHA256])
	assert.Equal(t, "9", meta[output.MetaSeed])
	for _, k := range []string{output.MetaObsSpace, output.MetaActSpace, output.MetaPolicySpec, output.MetaEnv, output.MetaSamplerVersion} {
		assert.NotEmpty(t, meta[k], k)
	}
	pf, err := file.OpenParquetFile(path, false)
	require.NoError(t, err)
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, nil)
	require.NoError(t, err)
	sc, err := fr.Schema()
	require.NoError(t, err)
	for name, want := range map[string]arrow.Type{"obs": arrow.FIXED_SIZE_LIST, "new_obs": arrow.FIXED_SIZE_LIST,
		"rewards": arrow.FLOAT32, "terminateds": arrow.BOOL, "eps_id": arrow.INT64, "module_id": arrow.STRING,
		"action_dist_inputs": arrow.FIXED_SIZE_LIST, "action_logp": arrow.FLOAT32, "vf_preds": arrow.FLOAT32,
		"advantages": arrow.FLOAT32, "value_targets": arrow.FLOAT32} {
		idx := sc.FieldIndices(name)
		require.Len(t, idx, 1, name)
		assert.Equal(t, want, sc.Field(idx[0]).Type.ID(), name)
	}
	obs := sc.Field(sc.FieldIndices("obs")[0]).Type.(*arrow.FixedSizeListType)
	assert.Equal(t, arrow.FLOAT32, obs.Elem().ID())
}

// TestConvert: JSON lines to Parquet and back gives the same bytes; the rotated files of a
// run go into one file.
func TestConvert(t *testing.T) {
	needRuntime(t)
	dir := t.TempDir()
	js := runJSON(t, "--env", "StatelessCartPole", "--steps", "1200", "--num-envs", "2", "--out", filepath.Join(dir, "a.jsonl"), "--max-file-size", "100KiB")
	require.Greater(t, len(js.Out), 1)
	pq := filepath.Join(dir, "b.parquet")
	code, _, errs := runCLI(append(append([]string{"convert"}, js.Out...), pq)...)
	require.Equal(t, 0, code, errs)
	back := filepath.Join(dir, "c.json")
	code, out, errs := runCLI("convert", pq, back)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, fmt.Sprintf("%d rows", js.Rows))
	var want []byte
	for _, f := range js.Out {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		want = append(want, data...)
	}
	got, err := os.ReadFile(back)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))

	// --format overrides the extension.
	odd := filepath.Join(dir, "d.data")
	code, _, errs = runCLI("convert", "--format", "parquet", back, odd)
	require.Equal(t, 0, code, errs)
	_, err = output.ParquetMetadata(odd)
	require.NoError(t, err)
}

// TestConvertErrors: usage errors and unreadable inputs are one line each.
func TestConvertErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte("{\"type\":\"SampleBatch\",\"obs\":[[1.0]]\n"), 0o644))
	notPQ := filepath.Join(dir, "x.parquet")
	require.NoError(t, os.WriteFile(notPQ, []byte("not parquet"), 0o644))
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"convert"}, 2, "want at least one input"},
		{[]string{"convert", bad, bad}, 2, "also an input"},
		{[]string{"convert", "--format", "csv", bad, filepath.Join(dir, "o")}, 2, "unknown format"},
		{[]string{"convert", bad, filepath.Join(dir, "o.parquet")}, 1, "bad.jsonl line 1"},
		{[]string{"convert", notPQ, filepath.Join(dir, "o.jsonl")}, 1, "x.parquet"},
		{[]string{"convert", filepath.Join(dir, "missing.jsonl"), filepath.Join(dir, "o.parquet")}, 1, "missing.jsonl"},
	} {
		code, _, errs := runCLI(tc.args...)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, errs)
		assert.Contains(t, errs, tc.want, tc.args)
	}
}
