package connectors

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/internal/onnxtest"
	"github.com/onnxrl/sampler/models"
)

// lyingPolicy declares a [batch, 2] action output but produces [batch, 4]: its logits are
// the observation itself (Identity).
func lyingPolicy(t *testing.T) *models.Policy {
	t.Helper()
	data := onnxtest.Model{
		Inputs:  []onnxtest.Value{{Name: "obs", ElemType: onnxtest.Float32, Dims: []int64{-1, 4}, Names: []string{"batch"}}},
		Outputs: []onnxtest.Value{{Name: "logits", ElemType: onnxtest.Float32, Dims: []int64{-1, 2}, Names: []string{"batch"}}},
		Nodes:   []onnxtest.Node{{Op: "Identity", Inputs: []string{"obs"}, Outputs: []string{"logits"}}},
		Metadata: [][2]string{{models.MetadataKey, `{"observation_input":"obs","action_output":"logits","distribution":"categorical",
			"observation_space":{"type":"Box","low":-1,"high":1,"shape":[4]},"action_space":{"type":"Discrete","n":2}}`}},
	}.Bytes()
	m, err := inference.LoadBytes("lying.onnx", data)
	require.NoError(t, err)
	p, err := models.LoadModel(m, "")
	require.NoError(t, err)
	return p
}

// A model whose real action output is wider than its declared one used to pass New (which
// sees only the declaration) and then panic in checkLen at the first step; Bind now checks
// the shape the session probed and returns a *ShapeError.
func TestBindRejectsRealOutputShape(t *testing.T) {
	if err := inference.Init(); err != nil {
		t.Skipf("ONNX Runtime not available: %v", err)
	}
	p := lyingPolicy(t)
	c, err := New(Config{Policy: p, Capacity: 8})
	require.NoError(t, err, "the declared shape fits")
	for _, capacity := range []int{1, 8} {
		sess, err := inference.NewSession(p.Model, inference.Options{Capacity: capacity, IntraOpThreads: 1})
		require.NoError(t, err)
		err = c.Bind(sess)
		sess.Close()
		var se *ShapeError
		require.True(t, errors.As(err, &se), "capacity %d: got %v", capacity, err)
		require.Contains(t, err.Error(), `"logits"`)
		require.Contains(t, err.Error(), "4 values per row")
	}
}
