package envrunner_test

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/models"
)

// flippedCartPole returns the bundled CartPole MLP with its policy head negated (the
// initializers pi.weight and pi.bias): the same spec and shapes, logits of the opposite
// sign, so that every greedy action is the other one.
func flippedCartPole(t *testing.T) *models.Policy {
	t.Helper()
	needORT(t)
	data, err := os.ReadFile("../models/cartpole_mlp.onnx")
	require.NoError(t, err)
	spec, err := os.ReadFile("../models/cartpole_mlp.policy.json")
	require.NoError(t, err)
	flipped := 0
	// ModelProto.graph (7) -> GraphProto.initializer (5) -> TensorProto name (8), raw_data (9).
	protoFields(data, func(num int, graph []byte) {
		if num != 7 {
			return
		}
		protoFields(graph, func(num int, init []byte) {
			if num != 5 {
				return
			}
			var name string
			var raw []byte
			protoFields(init, func(num int, b []byte) {
				switch num {
				case 8:
					name = string(b)
				case 9:
					raw = b
				}
			})
			if name == "pi.weight" || name == "pi.bias" {
				for i := 0; i+4 <= len(raw); i += 4 { // in place: the lengths stay
					binary.LittleEndian.PutUint32(raw[i:], binary.LittleEndian.Uint32(raw[i:])^(1<<31))
				}
				flipped++
			}
		})
	})
	require.Equal(t, 2, flipped, "the policy head's initializers")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "flipped.onnx"), data, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "flipped.policy.json"), spec, 0o644))
	p, err := models.Load(filepath.Join(dir, "flipped.onnx"))
	require.NoError(t, err)
	return p
}

// protoFields calls fn with every length-delimited field of the protobuf message b (the
// slices alias b).
func protoFields(b []byte, fn func(num int, field []byte)) {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		b = b[n:]
		switch key & 7 {
		case 0:
			_, n = binary.Uvarint(b)
			b = b[n:]
		case 1:
			b = b[8:]
		case 5:
			b = b[4:]
		case 2:
			l, n := binary.Uvarint(b)
			fn(int(key>>3), b[n:n+int(l)])
			b = b[n+int(l):]
		default:
			panic("protoFields: unsupported wire type")
		}
	}
}

// logitsFrom reports which model made the rows of the batch: +1 when each row's
// action_dist_inputs are the bundled model's logits of its observation, -1 when they are
// their negation (the flipped model), 0 for a mix. The first row of an episode that goes on
// from the batch before (t > 0) is left out: its action was chosen before the cut, in the
// last step of that batch, and so by the model of that step.
func logitsFrom(t *testing.T, net *directNet, b *envrunner.SampleBatch) int {
	t.Helper()
	plus, minus, rows := 0, 0, 0
	seen := map[int64]bool{}
	for i := range b.Count {
		if !seen[b.EpsID[i]] {
			seen[b.EpsID[i]] = true
			if b.T[i] > 0 {
				continue
			}
		}
		rows++
		want, _, _ := net.run(t, envrunner.Row(b.Obs, 4, i), nil)
		got := envrunner.Row(b.ActionDistInputs, 2, i)
		switch {
		case close2(got, want, 1):
			plus++
		case close2(got, want, -1):
			minus++
		}
	}
	switch {
	case rows == 0:
		t.Fatal("logitsFrom: no rows to check")
	case plus == rows:
		return 1
	case minus == rows:
		return -1
	}
	return 0
}

func close2(got, want []float32, sign float32) bool {
	for k := range want {
		if math.Abs(float64(got[k]-sign*want[k])) > 1e-4 {
			return false
		}
	}
	return true
}

// TestSwapPolicyAtBatchBoundary swaps the model of a policy between fragments, under both
// env protocols: the batch being collected when SwapPolicy is called comes from the old model
// throughout, every later one from the new; the episodes running across the swap go on (same
// eps_id, t continuing, no done flag at the cut), and the agents keep their actions' layout.
func TestSwapPolicyAtBatchBoundary(t *testing.T) {
	mlp := bundledPolicy(t, "cartpole_mlp")
	flipped := flippedCartPole(t)
	net := newDirectNet(t, mlp)
	for _, columnar := range []bool{true, false} {
		t.Run(map[bool]string{true: "columnar", false: "poll"}[columnar], func(t *testing.T) {
			be := vectorOf(t, "CartPole-v1", env.Config{"max_episode_steps": 40}, 4, 0)
			if !columnar {
				be = hidden{be}
			}
			r := newRunner(t, envrunner.Config{Env: be, NumEnvs: 4, Seed: 3, FragmentLength: 10,
				Policies: singlePolicy(mlp, false), GAE: &envrunner.GAE{Gamma: 0.99, Lambda: 0.95}})
			first := &envrunner.MultiAgentBatch{}
			require.NoError(t, r.Sample(first))
			for range 4 { // into the next fragment, then swap: it takes effect at its end
				require.NoError(t, r.Step())
			}
			require.NoError(t, r.SwapPolicy(envrunner.DefaultPolicyID, flipped))
			old := &envrunner.MultiAgentBatch{}
			require.NoError(t, r.Sample(old))
			after := sampleBatches(t, r, 2)
			pid := envrunner.DefaultPolicyID
			assert.Equal(t, 1, logitsFrom(t, net, first.PolicyBatches[pid]), "before the swap")
			assert.Equal(t, 1, logitsFrom(t, net, old.PolicyBatches[pid]), "the fragment SwapPolicy was called in")
			for i, b := range after {
				assert.Equal(t, -1, logitsFrom(t, net, b.PolicyBatches[pid]), "fragment %d after the swap", i)
				assert.Same(t, flipped, b.PolicyBatches[pid].Model, "fragment %d after the swap names its model", i)
			}
			assert.Same(t, mlp, first.PolicyBatches[pid].Model, "the batches name the model that filled them")
			assert.Same(t, mlp, old.PolicyBatches[pid].Model)
			// Every episode running at the boundary goes on in the next batch, where its
			// agent's rows continue at the next t.
			ob, nb := old.PolicyBatches[pid], after[0].PolicyBatches[pid]
			last := map[int64]int32{}
			for i := range ob.Count {
				if ob.Terminateds[i] || ob.Truncateds[i] {
					delete(last, ob.EpsID[i])
					continue
				}
				last[ob.EpsID[i]] = ob.T[i]
			}
			require.NotEmpty(t, last)
			firstT := map[int64]int32{}
			for i := nb.Count - 1; i >= 0; i-- {
				firstT[nb.EpsID[i]] = nb.T[i]
			}
			for id, tl := range last {
				tn, ok := firstT[id]
				if assert.True(t, ok, "episode %d did not go on after the swap", id) {
					assert.Equal(t, tl+1, tn, "episode %d: t after the swap", id)
				}
			}
			for _, b := range append(after, first, old) {
				require.NoError(t, b.PolicyBatches[pid].Validate())
			}
		})
	}
}

// TestSwapPolicyWhileRunning swaps from the sink's goroutine while a Group steps the runner
// (run it with -race): the batches handed over after the swap took effect come from the new
// model, and the run goes on without an error.
func TestSwapPolicyWhileRunning(t *testing.T) {
	mlp := bundledPolicy(t, "cartpole_mlp")
	flipped := flippedCartPole(t)
	net := newDirectNet(t, mlp)
	be := vectorOf(t, "CartPole-v1", nil, 4, 0)
	r, err := envrunner.New(envrunner.Config{Env: be, NumEnvs: 4, Seed: 3, FragmentLength: 10,
		Policies: singlePolicy(mlp, false), MaxEnvSteps: 400})
	require.NoError(t, err)
	g := envrunner.NewGroup([]*envrunner.Runner{r})
	defer func() { require.NoError(t, g.Close()) }()
	var mu sync.Mutex
	var from []int
	var swapErr error
	err = g.Run(context.Background(), envrunner.GroupOptions{BatchesPerRunner: 1, Sink: func(b *envrunner.MultiAgentBatch) error {
		defer g.Release(b)
		if b.Rows() == 0 {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		from = append(from, logitsFrom(t, net, b.PolicyBatches[envrunner.DefaultPolicyID]))
		if len(from) == 2 {
			swapErr = r.SwapPolicy(envrunner.DefaultPolicyID, flipped)
		}
		return nil
	}})
	require.NoError(t, err)
	require.NoError(t, swapErr)
	require.Len(t, from, 10)
	assert.Equal(t, []int{1, 1}, from[:2])
	// The runner may have taken one more batch before the swap was asked for (one batch out
	// to the sink, one being filled); every batch after that is the new model's.
	assert.Equal(t, []int{-1, -1, -1, -1, -1, -1, -1}, from[3:])
}

// TestSwapPolicyMismatch: a model that does not fit the policy's batches or connectors is
// refused with ErrSwapMismatch (or an error naming the problem), and the runner goes on
// with its model.
func TestSwapPolicyMismatch(t *testing.T) {
	mlp := bundledPolicy(t, "cartpole_mlp")
	net := newDirectNet(t, mlp)
	be := vectorOf(t, "CartPole-v1", nil, 2, 0)
	r := newRunner(t, envrunner.Config{Env: be, NumEnvs: 2, Seed: 3, FragmentLength: 5, Policies: singlePolicy(mlp, false)})
	for _, name := range []string{"pendulum_gaussian", "lstm_policy"} {
		err := r.SwapPolicy(envrunner.DefaultPolicyID, bundledPolicy(t, name))
		assert.ErrorIs(t, err, envrunner.ErrSwapMismatch, name)
	}
	assert.ErrorContains(t, r.SwapPolicy("other", mlp), `no policy "other"`)
	assert.ErrorContains(t, r.SwapPolicy(envrunner.DefaultPolicyID, nil), "no model")
	b := &envrunner.MultiAgentBatch{}
	require.NoError(t, r.Sample(b))
	assert.Equal(t, 1, logitsFrom(t, net, b.PolicyBatches[envrunner.DefaultPolicyID]))

	rnd := newRunner(t, envrunner.Config{Env: vectorOf(t, "CartPole-v1", nil, 2, 0), NumEnvs: 2,
		Policies: columnarRandom(t)})
	assert.ErrorContains(t, rnd.SwapPolicy("random_0", mlp), "random policy")
}

func columnarRandom(t *testing.T) map[envrunner.PolicyID]envrunner.PolicyConfig {
	pols, _ := columnarPolicies(t, columnarCase{env: "CartPole-v1"})
	return pols
}

// TestSwapRecurrentPolicy swaps a recurrent policy's model for another session of the same
// model: the state inputs are checked and bound (the new session's state buffer binds
// without failing), and sampling goes on with the agents' states kept. A model with other
// states, or none, is refused.
func TestSwapRecurrentPolicy(t *testing.T) {
	lstm := bundledPolicy(t, "lstm_policy")
	r := newRunner(t, envrunner.Config{Env: vectorOf(t, "StatelessCartPole", nil, 3, 0), NumEnvs: 3, Seed: 4,
		FragmentLength: 6, Policies: singlePolicy(lstm, true)})
	b := &envrunner.MultiAgentBatch{}
	require.NoError(t, r.Sample(b))
	require.NoError(t, r.SwapPolicy(envrunner.DefaultPolicyID, bundledPolicy(t, "lstm_policy")))
	for range 2 {
		require.NoError(t, r.Sample(b))
		pb := b.PolicyBatches[envrunner.DefaultPolicyID]
		require.Equal(t, 18, pb.Count)
		require.NotEmpty(t, pb.StateIn)
		assert.Len(t, pb.StateIn[0], pb.Count*pb.StateWidths[0])
	}
	err := r.SwapPolicy(envrunner.DefaultPolicyID, bundledPolicy(t, "cartpole_mlp"))
	assert.ErrorIs(t, err, envrunner.ErrSwapMismatch)
	assert.ErrorContains(t, err, "RNN states")
}
