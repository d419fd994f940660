package connectors

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/spaces"
)

func TestActionPipelineUnsquashClip(t *testing.T) {
	box := spaces.NewBoxBounds([]float32{0, -2, float32(math.Inf(-1))}, []float32{10, 2, float32(math.Inf(1))})
	d := &Deterministic{N: 3}
	out := []float32{0, 0.5, 7, -3, 1.5, -7}
	p, err := NewActionPipeline(d, box, ActionConfig{NormalizeActions: true}, 4)
	require.NoError(t, err)
	p.Compute(nil, 2, out, nil)
	// low + (a+1)*(high-low)/2 after clipping a to [-1, 1]; an unbounded element passes.
	assert.Equal(t, []float32{5, 1, 7}, p.Action(0))
	assert.Equal(t, []float32{0, 2, -7}, p.Action(1))
	// The policy's own action is kept for training data.
	assert.Equal(t, []float32{0, 0.5, 7}, p.PolicyAction(0))
	assert.Equal(t, []float32{-3, 1.5, -7}, p.PolicyAction(1))

	p, err = NewActionPipeline(d, box, ActionConfig{ClipActions: true}, 4)
	require.NoError(t, err)
	p.Compute(nil, 2, out, nil)
	assert.Equal(t, []float32{0, 0.5, 7}, p.Action(0))
	assert.Equal(t, []float32{0, 1.5, -7}, p.Action(1))
	assert.Equal(t, []float32{-3, 1.5, -7}, p.PolicyAction(1))

	assert.Equal(t, []float32{10, -2, 3}, Unsquash(make([]float32, 3), []float32{4, -1, 3}, box))
}

func TestActionPipelineGaussianSeparateLogStd(t *testing.T) {
	g := &DiagGaussian{N: 2}
	box := spaces.NewBox(-1, 1, 2)
	p, err := NewActionPipeline(g, box, ActionConfig{Explore: true}, 8)
	require.NoError(t, err)
	mean := []float32{0.1, 0.2, 0.3, 0.4}
	shared := []float32{-1, -2}
	p.Compute(rand.New(rand.NewPCG(1, 1)), 2, mean, shared)
	assert.Equal(t, []float32{0.3, 0.4, -1, -2}, p.DistInputs(1))
	assert.InDelta(t, g.LogProb(p.DistInputs(1), p.PolicyAction(1)), float64(p.LogP(1)), 1e-5)
	perRow := []float32{-1, -2, -3, -4}
	p.Compute(rand.New(rand.NewPCG(1, 1)), 2, mean, perRow)
	assert.Equal(t, []float32{0.3, 0.4, -3, -4}, p.DistInputs(1))

	// Not exploring: the mean, and the log-density at the mean.
	p, _ = NewActionPipeline(g, box, ActionConfig{}, 8)
	p.Compute(nil, 2, []float32{0.1, 0.2, -1, -2, 0.3, 0.4, 0, 0}, nil)
	assert.Equal(t, []float32{0.3, 0.4}, p.Action(1))
	assert.InDelta(t, -2*halfLog2Pi, float64(p.LogP(1)), 1e-6)
}

func TestActionPipelineSeedAndUnbatch(t *testing.T) {
	c := &Categorical{N: 4, Start: 1}
	run := func(seed uint64) []float32 {
		p, err := NewActionPipeline(c, &spaces.Discrete{N: 4, Start: 1}, ActionConfig{Explore: true}, 16)
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(seed, 0))
		logits := make([]float32, 16*4)
		var got []float32
		for range 10 {
			p.Compute(rng, 16, logits, nil)
			for i := range 16 {
				got = append(got, p.Action(i)[0])
			}
		}
		return got
	}
	assert.Equal(t, run(3), run(3))
	assert.NotEqual(t, run(3), run(4))

	p, _ := NewActionPipeline(c, &spaces.Discrete{N: 4, Start: 1}, ActionConfig{}, 4)
	p.Compute(nil, 2, []float32{0, 0, 5, 0, 9, 0, 0, 0}, nil)
	acts := p.Unbatch(nil, []AgentKey{{0, "a"}, {3, "b"}})
	assert.Equal(t, []env.Action{{Env: 0, Agent: "a", Action: []float32{3}}, {Env: 3, Agent: "b", Action: []float32{1}}}, acts)
}

func TestActionPipelineNoAlloc(t *testing.T) {
	g := &DiagGaussian{N: 2}
	p, err := NewActionPipeline(g, spaces.NewBox(-2, 2, 2), ActionConfig{Explore: true, NormalizeActions: true}, 256)
	require.NoError(t, err)
	out := make([]float32, 256*4)
	rng := rand.New(rand.NewPCG(1, 1))
	keys := make([]AgentKey, 256)
	dst := make([]env.Action, 0, 256)
	assert.Zero(t, testing.AllocsPerRun(50, func() {
		p.Compute(rng, 256, out, nil)
		dst = p.Unbatch(dst[:0], keys)
	}))
}

func bundled(t testing.TB, name string) *models.Policy {
	t.Helper()
	p, err := models.Bundled(name)
	require.NoError(t, err)
	return p
}

func TestNewValidates(t *testing.T) {
	mlp := bundled(t, "cartpole_mlp")
	c, err := New(Config{Policy: mlp, Capacity: 8})
	require.NoError(t, err)
	assert.Equal(t, 4, c.Agent.Width())
	assert.Nil(t, c.State)

	var se *ShapeError
	_, err = New(Config{Policy: mlp, ObservationSpace: spaces.NewBox(-1, 1, 5)})
	require.True(t, errors.As(err, &se), "%v", err)
	assert.ErrorContains(t, err, "[batch,4] (4 values per row)")
	assert.ErrorContains(t, err, "5 values per row")

	_, err = New(Config{Policy: mlp, ActionSpace: &spaces.Discrete{N: 3}})
	require.True(t, errors.As(err, &se), "%v", err)
	assert.ErrorContains(t, err, "Discrete(3)")
	assert.ErrorContains(t, err, "(2 values per row)")

	_, err = New(Config{Policy: mlp, ActionSpace: spaces.NewBox(-1, 1, 2)})
	require.True(t, errors.As(err, &se), "%v", err)
	assert.ErrorContains(t, err, "a Discrete action space")

	// A Discrete observation is one-hot: Discrete(4) fits the 4-wide input.
	_, err = New(Config{Policy: mlp, ObservationSpace: &spaces.Discrete{N: 4}})
	assert.NoError(t, err)

	g := bundled(t, "pendulum_gaussian")
	c, err = New(Config{Policy: g, Capacity: 4})
	require.NoError(t, err)
	assert.Equal(t, models.DiagGaussian, c.Action.Distribution().Name())
	_, err = New(Config{Policy: g, ActionSpace: spaces.NewBox(-2, 2, 3)})
	require.True(t, errors.As(err, &se), "%v", err)

	l := bundled(t, "lstm_policy")
	c, err = New(Config{Policy: l, Capacity: 4})
	require.NoError(t, err)
	require.NotNil(t, c.State)
	assert.Equal(t, 2, c.State.Len())
}

func TestGatherScatterRows(t *testing.T) {
	// Two slots of [outer=2, inner=3] state; batch rows are slots 1 and 0.
	src := []float32{0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15}
	dst := make([]float32, 12)
	GatherRows(dst, 2, 3, src, []int{1, 0})
	// [outer, batch, inner]: chunk k of row i at (k*2+i)*3.
	assert.Equal(t, []float32{10, 11, 12, 0, 1, 2, 13, 14, 15, 3, 4, 5}, dst)
	back := make([]float32, 12)
	ScatterRows(back, 2, 3, dst, []int{1, 0})
	assert.Equal(t, src, back)
}

// The LSTM policy's states travel through a real session: gathered per agent, run, scattered
// back, and the second step with the scattered states equals a direct run with them.
func TestStateBufferThroughSession(t *testing.T) {
	if err := inference.Init(); err != nil {
		t.Skipf("ONNX Runtime not available: %v", err)
	}
	p := bundled(t, "lstm_policy")
	c, err := New(Config{Policy: p, Capacity: 8, Action: ActionConfig{Explore: true}})
	require.NoError(t, err)
	sess, err := inference.NewSession(p.Model, inference.Options{Capacity: 8, IntraOpThreads: 1})
	require.NoError(t, err)
	defer sess.Close()
	require.NoError(t, c.Bind(sess))
	obsT, err := sess.Input("obs")
	require.NoError(t, err)

	rng := rand.New(rand.NewPCG(9, 9))
	slots := make([]int, 3)
	agents := []AgentKey{{0, "a"}, {1, "a"}, {2, "a"}}
	obs := [][]float32{{0.1, -0.2}, {0.3, 0.05}, {-0.4, 0.2}}
	step := func(order []int) {
		require.NoError(t, sess.SetBatch(len(order)))
		in := obsT.Float32()
		for i, a := range order {
			slots[i] = c.Agent.Slot(agents[a].Env, agents[a].Agent)
			c.Agent.Write(in[i*2:(i+1)*2], slots[i], obs[a], 0)
		}
		c.State.Gather(slots[:len(order)])
		require.NoError(t, sess.Run())
		c.AfterRun(rng, sess, slots[:len(order)])
	}
	step([]int{0, 1, 2})
	h1 := append([]float32(nil), c.State.Row(0, c.Agent.Slot(1, "a"))...)
	assert.NotZero(t, h1[0])
	// Run agent 1 alone with its state directly, and through the buffer in another order.
	ref, err := inference.NewSession(p.Model, inference.Options{Capacity: 8, IntraOpThreads: 1})
	require.NoError(t, err)
	defer ref.Close()
	h0 := append([]float32(nil), c.State.Row(0, 1)...)
	c0 := append([]float32(nil), c.State.Row(1, 1)...)
	r, err := ref.Infer(map[string]inference.Data{
		"obs":        {Shape: []int64{1, 2}, Values: []float64{0.3, 0.05}},
		"state_in_0": {Shape: []int64{1, 1, 32}, Values: f64(h0)},
		"state_in_1": {Shape: []int64{1, 1, 32}, Values: f64(c0)},
	})
	require.NoError(t, err)
	step([]int{2, 1, 0})
	got := c.State.Row(0, c.Agent.Slot(1, "a"))
	for j, v := range r["state_out_0"].Values {
		require.InDelta(t, v, got[j], 1e-5, "h[%d]", j)
	}
	// An episode start zeroes the agent's states.
	c.Agent.Reset(c.Agent.Slot(1, "a"))
	assert.Equal(t, make([]float32, 32), c.State.Row(0, c.Agent.Slot(1, "a")))

	// Steady state allocates nothing.
	allocs := testing.AllocsPerRun(20, func() { step([]int{0, 1, 2}) })
	assert.Zero(t, allocs)
}

func f64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

func TestActionPipelineSkipLogp(t *testing.T) {
	md := &spaces.MultiDiscrete{Nvec: []int64{3, 2}}
	cases := []struct {
		dist Distribution
		act  spaces.Space
	}{
		{&Categorical{N: 3}, &spaces.Discrete{N: 3}},
		{NewMultiCategorical([]int{3, 2}), md},
		{&DiagGaussian{N: 2}, spaces.NewBox(-1, 1, 2)}, // no ModeRows: the logp computed is dropped
	}
	for _, c := range cases {
		w := c.dist.InputSize()
		rng := rand.New(rand.NewPCG(3, 4))
		out := make([]float32, 16*w)
		for i := range out {
			out[i] = float32(rng.NormFloat64())
		}
		full, err := NewActionPipeline(c.dist, c.act, ActionConfig{}, 16)
		if err != nil {
			t.Fatal(err)
		}
		skip, err := NewActionPipeline(c.dist, c.act, ActionConfig{SkipLogp: true}, 16)
		if err != nil {
			t.Fatal(err)
		}
		full.Compute(nil, 16, out, nil)
		skip.Compute(nil, 16, out, nil)
		for i := range 16 {
			if !slices.Equal(full.Action(i), skip.Action(i)) {
				t.Fatalf("%s row %d: action %v with SkipLogp, %v without", c.dist.Name(), i, skip.Action(i), full.Action(i))
			}
			if skip.LogP(i) != 0 || full.LogP(i) == 0 {
				t.Fatalf("%s row %d: logp %v with SkipLogp, %v without", c.dist.Name(), i, skip.LogP(i), full.LogP(i))
			}
		}
	}
}
