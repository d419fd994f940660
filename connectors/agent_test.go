package connectors

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/spaces"
)

func mustSpace(t testing.TB, js string) spaces.Space {
	t.Helper()
	s, err := spaces.Unmarshal([]byte(js))
	require.NoError(t, err)
	return s
}

// The expected vector is what gymnasium.spaces.flatten gives for
//
//	Dict({"pos": Box(-1, 1, (2,)), "mode": Discrete(3, start=1),
//	      "t": Tuple((MultiDiscrete([2, 3]), MultiBinary(2)))})
//	flatten(space, {"pos": [0.5, -0.25], "mode": 2, "t": ([1, 2], [1, 0])})
//
// keys sorted ("mode", "pos", "t"), Discrete one-hot of value-start, MultiDiscrete one-hot per
// entry.
func TestFlattenOrderIsGymnasiums(t *testing.T) {
	s := mustSpace(t, `{"type":"Dict","spaces":{
		"pos":{"type":"Box","low":-1,"high":1,"shape":[2]},
		"mode":{"type":"Discrete","n":3,"start":1},
		"t":{"type":"Tuple","spaces":[{"type":"MultiDiscrete","nvec":[2,3]},{"type":"MultiBinary","n":2}]}}}`)
	raw := []float32{2, 0.5, -0.25, 1, 2, 1, 0} // raw layout: mode, pos, t
	want := []float32{0, 1, 0, 0.5, -0.25, 0, 1, 0, 0, 1, 1, 0}
	p, err := NewAgentPipeline(s, NewFlatten(s))
	require.NoError(t, err)
	require.Equal(t, 12, p.Width())
	row := make([]float32, 12)
	p.Write(row, p.Slot(0, "a"), raw, 0)
	assert.Equal(t, want, row)

	// And it agrees with spaces' Flatten on random values.
	rng := rand.New(rand.NewPCG(1, 1))
	ref := make([]float32, 12)
	for range 200 {
		s.Sample(rng, raw)
		s.Flatten(ref, raw)
		p.Write(row, 0, raw, 0)
		require.Equal(t, ref, row)
	}
	// An invalid discrete value gives zeros, not a panic.
	p.Write(row, 0, []float32{7, 0, 0, float32(math.NaN()), 2.5, 1, 0}, 0)
	assert.Equal(t, []float32{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0}, row)
}

func TestClip(t *testing.T) {
	s := spaces.NewBoxBounds([]float32{-1, 0}, []float32{1, 5})
	p, err := NewAgentPipeline(s, NewClipBox(s))
	require.NoError(t, err)
	row := make([]float32, 2)
	p.Write(row, p.Slot(0, "a"), []float32{-3, 7}, 0)
	assert.Equal(t, []float32{-1, 5}, row)
	p2, err := NewAgentPipeline(spaces.NewBox(-9, 9, 3), NewClip(-2, 2))
	require.NoError(t, err)
	row = make([]float32, 3)
	p2.Write(row, p2.Slot(0, "a"), []float32{-3, 1, 3}, 0)
	assert.Equal(t, []float32{-2, 1, 2}, row)
	_, err = NewAgentPipeline(spaces.NewBox(-9, 9, 3), &Clip{Low: []float32{0, 0}, High: []float32{1, 1}})
	assert.ErrorContains(t, err, "2 bounds for rows of 3")
}

func TestMeanStdFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	data := make([][]float32, 1000)
	for i := range data {
		data[i] = []float32{float32(3 + 2*rng.NormFloat64()), float32(-1 + 0.1*rng.NormFloat64())}
	}
	// Reference mean and sample variance in float64.
	var mean, v [2]float64
	for _, x := range data {
		mean[0] += float64(x[0]) / 1000
		mean[1] += float64(x[1]) / 1000
	}
	for _, x := range data {
		for j := range 2 {
			d := float64(x[j]) - mean[j]
			v[j] += d * d / 999
		}
	}
	newFilter := func() (*MeanStdFilter, *AgentPipeline) {
		f := NewMeanStdFilter(0)
		p, err := NewAgentPipeline(spaces.NewBox(-100, 100, 2), f)
		require.NoError(t, err)
		return f, p
	}
	all, pAll := newFilter()
	a, pa := newFilter()
	b, pb := newFilter()
	row := make([]float32, 2)
	for i, x := range data {
		pAll.Write(row, 0, x, 0)
		if i < 300 {
			pa.Write(row, 0, x, 0)
		} else {
			pb.Write(row, 0, x, 0)
		}
	}
	for j := range 2 {
		assert.InDelta(t, mean[j], all.Stat().Mean[j], 1e-9)
		assert.InEpsilon(t, v[j], all.Stat().Var(j), 1e-9)
	}
	// Merging b into a through the state documents equals the filter over both streams.
	sb, err := pb.State()
	require.NoError(t, err)
	require.NoError(t, pa.MergeState(sb))
	assert.Equal(t, all.Stat().N, a.Stat().N)
	for j := range 2 {
		assert.InDelta(t, all.Stat().Mean[j], a.Stat().Mean[j], 1e-12)
		assert.InEpsilon(t, all.Stat().M2[j], a.Stat().M2[j], 1e-10)
	}
	// The delta of b is everything b saw; after ClearDelta it is empty.
	d, err := b.Delta()
	require.NoError(t, err)
	var ds RunningStat
	require.NoError(t, json.Unmarshal(d, &ds))
	assert.Equal(t, int64(700), ds.N)
	b.ClearDelta()
	d, _ = b.Delta()
	require.NoError(t, json.Unmarshal(d, &ds))
	assert.Zero(t, ds.N)

	// Normalization: (x - mean) / (std + 1e-8), frozen filters do not move.
	all.Frozen = true
	pAll.Write(row, 0, []float32{float32(mean[0]), float32(mean[1] + math.Sqrt(v[1]))}, 0)
	assert.InDelta(t, 0, row[0], 1e-4)
	assert.InDelta(t, 1, row[1], 1e-3)
	assert.Equal(t, int64(1000), all.Stat().N)
	all.Clip = 0.5
	pAll.Write(row, 0, []float32{100, -100}, 0)
	assert.Equal(t, []float32{0.5, -0.5}, row)

	// SetState copies; a wrong width is an error.
	s, _ := pAll.State()
	require.NoError(t, pb.SetState(s))
	assert.Equal(t, all.Stat().N, b.Stat().N)
	assert.Error(t, pb.SetState(map[string]json.RawMessage{"mean_std_filter": json.RawMessage(`{"n":1,"mean":[1],"m2":[0]}`)}))
	assert.Error(t, pb.SetState(map[string]json.RawMessage{"nope": json.RawMessage(`{}`)}))
}

func TestFrameStack(t *testing.T) {
	p, err := NewAgentPipeline(spaces.NewBox(-9, 9, 2), NewFrameStack(3))
	require.NoError(t, err)
	require.Equal(t, 6, p.Width())
	row := make([]float32, 6)
	a, b := p.Slot(0, "a"), p.Slot(1, "a")
	require.NotEqual(t, a, b)
	p.Write(row, a, []float32{1, 1}, 0)
	assert.Equal(t, []float32{1, 1, 1, 1, 1, 1}, row)
	p.Write(row, b, []float32{5, 5}, 0)
	p.Write(row, a, []float32{2, 2}, 0)
	assert.Equal(t, []float32{1, 1, 1, 1, 2, 2}, row)
	p.Write(row, a, []float32{3, 3}, 0)
	p.Write(row, a, []float32{4, 4}, 0)
	assert.Equal(t, []float32{2, 2, 3, 3, 4, 4}, row)
	p.Write(row, b, []float32{6, 6}, 0)
	assert.Equal(t, []float32{5, 5, 5, 5, 6, 6}, row)
	p.Reset(a)
	p.Write(row, a, []float32{9, 9}, 0)
	assert.Equal(t, []float32{9, 9, 9, 9, 9, 9}, row)
}

func TestPrevActionsAndRewards(t *testing.T) {
	act := &spaces.Discrete{N: 3}
	p, err := NewAgentPipeline(spaces.NewBox(-9, 9, 1), NewPrevActions(act, 2), NewPrevRewards(2))
	require.NoError(t, err)
	require.Equal(t, 1+6+2, p.Width())
	row := make([]float32, 9)
	s := p.Slot(0, "a")
	p.Write(row, s, []float32{7}, 0)
	assert.Equal(t, []float32{7, 0, 0, 0, 0, 0, 0, 0, 0}, row)
	p.RecordAction(s, []float32{2})
	p.Write(row, s, []float32{8}, 1.5)
	assert.Equal(t, []float32{8, 0, 0, 0, 0, 0, 1, 0, 1.5}, row)
	p.RecordAction(s, []float32{0})
	p.Write(row, s, []float32{9}, -1)
	assert.Equal(t, []float32{9, 0, 0, 1, 1, 0, 0, 1.5, -1}, row)
	p.Reset(s)
	p.Write(row, s, []float32{1}, 0)
	assert.Equal(t, []float32{1, 0, 0, 0, 0, 0, 0, 0, 0}, row)
}

func TestSlotsAndWriteBatch(t *testing.T) {
	s := spaces.NewBox(-9, 9, 1)
	p, err := NewAgentPipeline(s, NewFrameStack(2))
	require.NoError(t, err)
	b := &env.Batch{Agents: []env.AgentObs{
		{Env: 0, Agent: "a", Obs: []float32{1}},
		{Env: 1, Agent: "a", Obs: []float32{2}},
	}}
	dst := make([]float32, 4)
	slots := make([]int, 2)
	p.WriteBatch(dst, slots, b)
	assert.Equal(t, []int{0, 1}, slots)
	assert.Equal(t, []float32{1, 1, 2, 2}, dst)
	b.Agents[0].Obs[0], b.Agents[1].Obs[0] = 3, 4
	b.Envs = []env.EnvStatus{{Env: 1, Reset: true}}
	p.WriteBatch(dst, slots, b)
	assert.Equal(t, []float32{1, 3, 4, 4}, dst)
	assert.Equal(t, 2, p.Slots().Active())

	// Released slots are reused; keys are reported.
	p.Release(0, "a")
	k, used := p.Slots().Key(0)
	assert.False(t, used)
	assert.Equal(t, AgentKey{}, k)
	assert.Equal(t, 0, p.Slot(5, "z"))
	k, used = p.Slots().Key(0)
	assert.True(t, used)
	assert.Equal(t, AgentKey{5, "z"}, k)
	assert.Equal(t, 2, p.Slots().Len())
	assert.False(t, p.Slots().Release(9, "x"))
}

func TestAgentPipelineErrors(t *testing.T) {
	s := mustSpace(t, `{"type":"Discrete","n":3}`)
	_, err := NewAgentPipeline(s, NewFlatten(spaces.NewBox(0, 1, 4)))
	assert.ErrorContains(t, err, "takes 4 values, got 1")
	_, err = NewAgentPipeline(s, NewFrameStack(0))
	assert.Error(t, err)
	_, err = NewAgentPipeline(s, NewFrameStack(2), NewFrameStack(2))
	assert.ErrorContains(t, err, "two agent connectors")
	_, err = NewAgentPipeline(nil)
	assert.Error(t, err)
	p, err := NewAgentPipeline(s)
	require.NoError(t, err)
	row := make([]float32, 1)
	p.Write(row, 0, []float32{2}, 0)
	assert.Equal(t, []float32{2}, row)
	assert.Panics(t, func() { p.Write(row, 0, []float32{1, 2}, 0) })
}
