package output

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	_ "github.com/onnxrl/sampler/env/classic" // registers MultiAgentCartPole
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/spaces"
)

// TestAgentIDInFilesIsTheAgentsIDString: agent_id in files is the id the environment gave
// its agent (RLlib's agent_id, a string), not an index: a multi-agent run written as JSON
// lines and as Parquet reads back with the environment's ids, beside agent_index, and the
// Parquet column is a byte array (string), the JSON one a list of strings.
func TestAgentIDInFilesIsTheAgentsIDString(t *testing.T) {
	be, err := env.ToBaseEnv(func(int) (any, error) {
		e, err := env.Make("MultiAgentCartPole", env.Config{"num_agents": 3})
		return e.Value(), err
	}, env.BaseEnvOptions{NumEnvs: 2, Seed: env.WithSeed(3)})
	require.NoError(t, err)
	r, err := envrunner.New(envrunner.Config{Env: be, NumEnvs: 2, FragmentLength: 10, Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{
		envrunner.DefaultPolicyID: {Random: true, ObservationSpace: spaces.NewBox(-1e9, 1e9, 4), ActionSpace: &spaces.Discrete{N: 2}}}})
	require.NoError(t, err)
	defer r.Close()
	dir := t.TempDir()
	for _, name := range []string{"x.jsonl", "x.parquet"} {
		path := filepath.Join(dir, name)
		w, err := NewWriter(path, Options{})
		require.NoError(t, err)
		for range 3 {
			m := &envrunner.MultiAgentBatch{}
			require.NoError(t, r.Sample(m))
			require.NoError(t, w.Write(m))
		}
		require.NoError(t, w.Close())
		rows := 0
		require.NoError(t, ReadFile(path, FormatAuto, func(m *envrunner.MultiAgentBatch) error {
			b := m.PolicyBatches[envrunner.DefaultPolicyID]
			require.Len(t, b.AgentID, b.Count, name)
			for i := range b.Count {
				assert.Equal(t, "agent_"+string(rune('0'+b.AgentIndex[i])), b.AgentID[i], "%s row %d: the env's id of agent_index %d", name, i, b.AgentIndex[i])
			}
			rows += b.Count
			return nil
		}))
		assert.Positive(t, rows, name)
	}
	line, err := os.ReadFile(filepath.Join(dir, "x.jsonl"))
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(line), `"agent_id":["agent_`), "JSON: strings")
	pf, err := file.OpenParquetFile(filepath.Join(dir, "x.parquet"), false)
	require.NoError(t, err)
	defer pf.Close()
	c := pf.MetaData().Schema.Column(pf.MetaData().Schema.ColumnIndexByName("agent_id"))
	assert.Equal(t, "BYTE_ARRAY", c.PhysicalType().String())
	assert.Equal(t, "String", c.LogicalType().String())
}
