package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/internal/onnxtest"
	"github.com/onnxrl/sampler/models"
)

// TestMessagesNameTheUsersTerms: issue 35's repro. A model with a static input of
// [65536, 8192] was refused with "server: /v1/act session: inference: tensor "obs" of shape
// [1 8192] has more than 268435456 elements (MaxTensorElements)": an HTTP endpoint, the
// wrong shape and a Go constant. Too many episodes said "(MaxConcurrentEpisodes)". The
// messages name the model's shape and the C API's option.
func TestMessagesNameTheUsersTerms(t *testing.T) {
	needRuntime(t)
	huge := filepath.Join(t.TempDir(), "huge_static.onnx")
	require.NoError(t, os.WriteFile(huge, onnxtest.Model{
		Inputs:  []onnxtest.Value{{Name: "obs", ElemType: onnxtest.Float32, Dims: []int64{65536, 8192}}},
		Outputs: []onnxtest.Value{{Name: "act", ElemType: onnxtest.Float32, Dims: []int64{65536, 8192}}},
		Nodes:   []onnxtest.Node{{Op: "Identity", Inputs: []string{"obs"}, Outputs: []string{"act"}}},
		Metadata: [][2]string{{models.MetadataKey, `{"observation_input":"obs","action_output":"act","distribution":"deterministic",
			"observation_space":{"type":"Box","low":-1,"high":1,"shape":[8192]},"action_space":{"type":"Box","low":-1,"high":1,"shape":[8192]}}`}},
	}.Bytes(), 0o644))
	_, err := openPolicy(huge, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `tensor "obs" of shape [65536 8192]`)
	for _, bad := range []string{"server:", "/v1/act", "MaxTensorElements", "[1 8192]"} {
		assert.NotContains(t, err.Error(), bad)
	}

	e, err := openEnv("cartpole_mlp", []byte(`{"max_episodes": 1}`))
	require.NoError(t, err)
	defer e.close()
	_, err = e.start(nil, true)
	require.NoError(t, err)
	_, err = e.start(nil, true)
	assert.Equal(t, statusLimit, statusOf(err))
	assert.ErrorContains(t, err, `1 running, the most allowed at once (raise the option "max_episodes")`)
	assert.NotContains(t, err.Error(), "MaxConcurrentEpisodes")
}
