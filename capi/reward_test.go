package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/envrunner/output"
	"github.com/onnxrl/sampler/externalenv"
)

// TestLogReturnsOverflow: issue 35's repro. log_returns(1e300) was accepted and written as
// Infinity (only NaN and infinities were refused), and so was a sum of rewards beyond
// float32. Both are refused with INVALID_ARGUMENT and the server's error; the file holds the
// reward that fitted.
func TestLogReturnsOverflow(t *testing.T) {
	needRuntime(t)
	out := filepath.Join(t.TempDir(), "r.jsonl")
	e, err := openEnv("cartpole_mlp", []byte(fmt.Sprintf(`{"explore": false, "max_episodes": 2, "out": %q}`, out)))
	require.NoError(t, err)
	id, err := e.start([]byte("a"), true)
	require.NoError(t, err)
	obs := []float32{0.01, 0, 0, 0}
	require.NoError(t, e.getActions([][]byte{[]byte(id)}, obs, make([]float32, 1)))
	for _, r := range []float64{1e300, -1e39, math.Inf(1), math.NaN()} {
		err := e.logReturns([]byte(id), r)
		require.ErrorIs(t, err, externalenv.ErrBadReward, "reward %v", r)
		assert.Equal(t, statusInvalidArgument, statusOf(err))
	}
	assert.EqualError(t, e.logReturns([]byte(id), 1e300),
		"externalenv: reward 1e+300 does not fit the rewards column (float32: at most 3.4028235e+38 in magnitude)")
	require.NoError(t, e.logReturns([]byte(id), 3e38))
	for range 3 {
		err := e.logReturns([]byte(id), 3e38)
		assert.Equal(t, statusInvalidArgument, statusOf(err))
		assert.ErrorContains(t, err, "makes the step's sum of rewards 6e+38")
	}
	err = e.logReturnsBatch([][]byte{[]byte(id)}, []float64{3e38})
	assert.Equal(t, statusInvalidArgument, statusOf(err))
	err = e.logReturnsBatch([][]byte{[]byte(id)}, []float64{1e300})
	assert.EqualError(t, err, "rewards[0]: externalenv: reward 1e+300 does not fit the rewards column (float32: at most 3.4028235e+38 in magnitude)")
	require.NoError(t, e.end([]byte(id), obs, false))
	require.NoError(t, e.close())

	data, err := os.ReadFile(out)
	require.NoError(t, err)
	var rewards []float32
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		m, err := output.Decode([]byte(line))
		require.NoError(t, err)
		for _, pb := range m.PolicyBatches {
			rewards = append(rewards, pb.Rewards...)
		}
	}
	assert.Equal(t, []float32{3e38}, rewards)
}
