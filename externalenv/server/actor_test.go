package server_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/server"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

func needRuntime(tb testing.TB) {
	tb.Helper()
	if err := inference.Init(); err != nil {
		tb.Skipf("ONNX Runtime not available (run `make onnxruntime`): %v", err)
	}
}

// TestPolicyActor: greedy actions are the argmax of the model's logits, for batches larger
// than a session's capacity too, from concurrent callers; exploring actions are valid.
func TestPolicyActor(t *testing.T) {
	needRuntime(t)
	p, err := models.Bundled("cartpole_mlp")
	require.NoError(t, err)
	a, err := server.NewPolicyActor(server.PolicyOptions{Policy: p, Workers: 2,
		Session: inference.Options{Capacity: 16}})
	require.NoError(t, err)
	defer a.Close()

	rng := rand.New(rand.NewPCG(3, 4))
	const n = 50
	obs := make([]float32, 0, n*4)
	for range n {
		obs = append(obs, float32(rng.NormFloat64()*0.5), float32(rng.NormFloat64()), float32(rng.NormFloat64()*0.1), float32(rng.NormFloat64()))
	}
	// The reference: the model's logits through Infer.
	sess, err := inference.NewSession(p.Model, inference.Options{Capacity: n})
	require.NoError(t, err)
	defer sess.Close()
	data := make([]float64, len(obs))
	for i, v := range obs {
		data[i] = float64(v)
	}
	outs, err := sess.Infer(map[string]inference.Data{"obs": {Shape: []int64{n, 4}, Values: data}})
	require.NoError(t, err)
	logits := outs["logits"].Values
	want := make([]float32, n)
	for i := range n {
		if logits[2*i+1] > logits[2*i] {
			want[i] = 1
		}
	}

	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				got, err := a.Act(context.Background(), nil, obs, n, server.ExploreOff)
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, want, got, "goroutine %d", g)
				got, err = a.Act(context.Background(), got[:0], obs, n, server.ExploreOn)
				if !assert.NoError(t, err) {
					return
				}
				for _, v := range got {
					assert.True(t, v == 0 || v == 1)
				}
			}
		}()
	}
	wg.Wait()

	// ActInto: the same actions, the log-softmax of the chosen logit and the value output,
	// across chunks of the session's capacity.
	out := server.ActOutputs{Actions: make([]float32, n), LogP: make([]float32, n), Values: make([]float32, n)}
	require.NoError(t, a.ActInto(context.Background(), out, obs, n, server.ExploreOff))
	assert.Equal(t, want, out.Actions)
	values := outs["value"].Values
	for i := range n {
		l0, l1 := logits[2*i], logits[2*i+1]
		chosen := l0
		if want[i] == 1 {
			chosen = l1
		}
		lse := math.Max(l0, l1) + math.Log(math.Exp(l0-math.Max(l0, l1))+math.Exp(l1-math.Max(l0, l1)))
		assert.InDelta(t, chosen-lse, float64(out.LogP[i]), 1e-4, "row %d", i)
		assert.InDelta(t, values[i], float64(out.Values[i]), 1e-4, "row %d", i)
	}
	assert.True(t, a.HasValue())
	assert.Equal(t, 4, a.ObservationSize())
	assert.Equal(t, 1, a.ActionSize())
	assert.Error(t, a.ActInto(context.Background(), server.ActOutputs{Actions: make([]float32, n-1)}, obs, n, server.ExploreOff))

	// Default: the options' Explore (false here).
	got, err := a.Act(context.Background(), nil, obs, n, server.ExploreDefault)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	_, err = a.Act(context.Background(), nil, obs[:5], 2, server.ExploreOff)
	assert.Error(t, err)

	require.NoError(t, a.Close())
	require.NoError(t, a.Close())
	_, err = a.Act(context.Background(), nil, obs, n, server.ExploreOff)
	assert.ErrorIs(t, err, inference.ErrClosed)

	// A recurrent policy cannot serve /v1/act.
	lstm, err := models.Bundled("lstm_policy")
	require.NoError(t, err)
	_, err = server.NewPolicyActor(server.PolicyOptions{Policy: lstm})
	assert.ErrorContains(t, err, "RNN state")
}

// TestActWithPolicy: /v1/act through HTTP with the bundled Gaussian policy: Box actions come
// back as arrays within the bounds (normalize_actions).
func TestActWithPolicy(t *testing.T) {
	needRuntime(t)
	p, err := models.Bundled("pendulum_gaussian")
	require.NoError(t, err)
	a, err := server.NewPolicyActor(server.PolicyOptions{Policy: p, Workers: 1,
		Action: connectors.ActionConfig{Explore: true, NormalizeActions: true}})
	require.NoError(t, err)
	defer a.Close()
	h := newHarness(t, harnessOptions{server: server.Options{Actor: a},
		env: externalenv.Options{ObservationSpace: p.Spec.ObservationSpace, ActionSpace: p.Spec.ActionSpace}})
	var sb strings.Builder
	sb.WriteString(`{"observations":[`)
	for i := range 10 {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, "[%g,%g,%g]", 0.5, -0.5, float32(i)-5)
	}
	sb.WriteString("]}")
	r := h.post("/v1/act", sb.String())
	require.Equal(t, http.StatusOK, r.code, r.raw)
	acts := r.body["actions"].([]any)
	require.Len(t, acts, 10)
	for _, v := range acts {
		arr := v.([]any)
		require.Len(t, arr, 1)
		x := arr[0].(float64)
		assert.True(t, x >= -2 && x <= 2, "%v", x)
	}
}
