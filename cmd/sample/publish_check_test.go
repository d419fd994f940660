package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/internal/onnxtest"
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/scaleout"
)

// TestPublishPolicyChecks: issue 35's repro. publish-policy published anything (/etc/passwd,
// models with lying or huge shapes); workers skipped them and the fleet ran an older version
// than the operator thought. Now a model is published only once it loads and binds as
// sample run would bind it (against --env's spaces when given); nothing else is published.
func TestPublishPolicyChecks(t *testing.T) {
	needRuntime(t)
	b, err := scaleout.StartBroker(scaleout.BrokerOptions{StoreDir: t.TempDir()})
	require.NoError(t, err)
	defer b.Close()
	dir := t.TempDir()
	sparse := filepath.Join(dir, "sparse.onnx")
	f, err := os.Create(sparse)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(50<<30))
	require.NoError(t, f.Close())
	huge := filepath.Join(dir, "huge_static.onnx")
	require.NoError(t, os.WriteFile(huge, onnxtest.Model{
		Inputs:  []onnxtest.Value{{Name: "obs", ElemType: onnxtest.Float32, Dims: []int64{65536, 8192}}},
		Outputs: []onnxtest.Value{{Name: "logits", ElemType: onnxtest.Float32, Dims: []int64{65536, 8192}}},
		Nodes:   []onnxtest.Node{{Op: "Identity", Inputs: []string{"obs"}, Outputs: []string{"logits"}}},
		Metadata: [][2]string{{models.MetadataKey, `{"observation_input":"obs","action_output":"logits","distribution":"deterministic",
			"observation_space":{"type":"Box","low":-1,"high":1,"shape":[8192]},"action_space":{"type":"Box","low":-1,"high":1,"shape":[8192]}}`}},
	}.Bytes(), 0o644))
	cartpole := "../../models/cartpole_mlp.onnx"

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"/etc/passwd"}, "not an ONNX model"},
		{[]string{"/dev/zero"}, "not a regular file (a character device)"},
		{[]string{sparse}, "more than the limit of 1 GiB (raise the limit with --max-model-size)"},
		{[]string{writeLyingModel(t)}, "4 values per row"},
		{[]string{huge}, "[65536 8192]"},
		{[]string{"--env", "Pendulum-v1", cartpole}, "against Pendulum-v1"},
		{[]string{"--env", "NoSuchEnv-v0", cartpole}, "NoSuchEnv-v0"},
		{[]string{"--env-config", "x=1", cartpole}, "--env-config needs --env"},
	} {
		args := append([]string{"publish-policy", "--server", b.URL(), "--run", "c"}, c.args...)
		code, out, errs := runCLI(args...)
		assert.NotEqual(t, 0, code, "%v: %s", c.args, out)
		assert.Contains(t, errs, c.want, "%v", c.args)
	}
	nc, err := b.Connect()
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx := context.Background()
	_, err = scaleout.CurrentPolicy(ctx, js, "c", "default_policy")
	require.Error(t, err, "a refused model was published")

	// The bundled model binds against CartPole-v1. Its spec comes from its sidecar, which the
	// workers do not receive: the published model carries it in its metadata.
	code, out, errs := runCLI("publish-policy", "--server", b.URL(), "--run", "c", "--env", "CartPole-v1", cartpole)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "version 1")
	assert.Contains(t, errs, "cartpole_mlp.policy.json in its metadata")
	pv, err := scaleout.CurrentPolicy(ctx, js, "c", "default_policy")
	require.NoError(t, err)
	data, err := scaleout.FetchModel(ctx, js, "c", pv)
	require.NoError(t, err)
	m, err := inference.LoadBytes("published", data)
	require.NoError(t, err)
	p, err := models.LoadModel(m, "")
	require.NoError(t, err)
	assert.Equal(t, "metadata "+models.MetadataKey, p.Source)
	want, err := models.Load(cartpole)
	require.NoError(t, err)
	assert.Equal(t, want.Spec.ActionOutput, p.Spec.ActionOutput)
	assert.Equal(t, want.Spec.ValueOutput, p.Spec.ValueOutput)
}
