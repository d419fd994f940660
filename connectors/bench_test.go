package connectors

import (
	"math/rand/v2"
	"testing"

	"github.com/onnxrl/sampler/spaces"
)

const benchAgents = 256

// benchAgent runs one connector (after a Flatten where the space needs it) over 256 agents per
// op and reports ns per agent.
func benchAgent(b *testing.B, obs spaces.Space, conns ...AgentConnector) {
	p, err := NewAgentPipeline(obs, conns...)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	raws := make([][]float32, benchAgents)
	slots := make([]int, benchAgents)
	for i := range raws {
		raws[i] = obs.Sample(rng, make([]float32, obs.Size()))
		slots[i] = p.Slot(i, "a")
	}
	rows := make([]float32, benchAgents*p.Width())
	w := p.Width()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for i, s := range slots {
			p.Write(rows[i*w:(i+1)*w], s, raws[i], 1)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchAgents), "ns/agent")
}

func BenchmarkAgentConnectors(b *testing.B) {
	box := spaces.NewBox(-1, 1, 16)
	dict := mustSpace(b, `{"type":"Dict","spaces":{"pos":{"type":"Box","low":-1,"high":1,"shape":[8]},
		"mode":{"type":"Discrete","n":5},"md":{"type":"MultiDiscrete","nvec":[3,4]}}}`)
	b.Run("agents=256/flatten_box16", func(b *testing.B) { benchAgent(b, box, NewFlatten(box)) })
	b.Run("agents=256/flatten_dict", func(b *testing.B) { benchAgent(b, dict, NewFlatten(dict)) })
	b.Run("agents=256/clip16", func(b *testing.B) { benchAgent(b, box, NewClip(-0.5, 0.5)) })
	b.Run("agents=256/mean_std_filter16", func(b *testing.B) { benchAgent(b, box, NewMeanStdFilter(10)) })
	b.Run("agents=256/frame_stack4x16", func(b *testing.B) { benchAgent(b, box, NewFrameStack(4)) })
	b.Run("agents=256/prev_actions_discrete4", func(b *testing.B) {
		benchAgent(b, box, NewPrevActions(&spaces.Discrete{N: 4}, 1))
	})
	b.Run("agents=256/prev_rewards", func(b *testing.B) { benchAgent(b, box, NewPrevRewards(1)) })
	b.Run("agents=256/chain", func(b *testing.B) {
		benchAgent(b, dict, NewFlatten(dict), NewClip(-10, 10), NewMeanStdFilter(10), NewFrameStack(4),
			NewPrevActions(&spaces.Discrete{N: 4}, 1), NewPrevRewards(1))
	})
}

func benchAction(b *testing.B, d Distribution, act spaces.Space, cfg ActionConfig) {
	p, err := NewActionPipeline(d, act, cfg, benchAgents)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]float32, benchAgents*d.InputSize())
	for i := range out {
		out[i] = float32(rng.NormFloat64())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p.Compute(rng, benchAgents, out, nil)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchAgents), "ns/agent")
}

func BenchmarkActionConnectors(b *testing.B) {
	explore := ActionConfig{Explore: true}
	b.Run("agents=256/categorical2/sample", func(b *testing.B) {
		benchAction(b, &Categorical{N: 2}, &spaces.Discrete{N: 2}, explore)
	})
	b.Run("agents=256/categorical2/argmax", func(b *testing.B) {
		benchAction(b, &Categorical{N: 2}, &spaces.Discrete{N: 2}, ActionConfig{})
	})
	b.Run("agents=256/multi_categorical3x4/sample", func(b *testing.B) {
		benchAction(b, NewMultiCategorical([]int{4, 4, 4}), &spaces.MultiDiscrete{Nvec: []int64{4, 4, 4}}, explore)
	})
	b.Run("agents=256/diag_gaussian6/sample_unsquash", func(b *testing.B) {
		benchAction(b, &DiagGaussian{N: 6}, spaces.NewBox(-2, 2, 6), ActionConfig{Explore: true, NormalizeActions: true})
	})
	b.Run("agents=256/deterministic6/clip", func(b *testing.B) {
		benchAction(b, &Deterministic{N: 6}, spaces.NewBox(-2, 2, 6), ActionConfig{ClipActions: true})
	})
}

func BenchmarkStateGatherScatter(b *testing.B) {
	// An LSTM state [1, 256, 64] twice (h and c).
	src := make([]float32, benchAgents*64)
	dst := make([]float32, benchAgents*64)
	slots := make([]int, benchAgents)
	for i := range slots {
		slots[i] = (i * 7) % benchAgents
	}
	b.Run("agents=256/lstm64x2", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for range 2 {
				GatherRows(dst, 1, 64, src, slots)
				ScatterRows(src, 1, 64, dst, slots)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchAgents), "ns/agent")
	})
}

func TestAgentPipelineNoAlloc(t *testing.T) {
	dict := mustSpace(t, `{"type":"Dict","spaces":{"pos":{"type":"Box","low":-1,"high":1,"shape":[8]},
		"mode":{"type":"Discrete","n":5}}}`)
	p, err := NewAgentPipeline(dict, NewFlatten(dict), NewClip(-10, 10), NewMeanStdFilter(10), NewFrameStack(4),
		NewPrevActions(&spaces.Discrete{N: 4}, 2), NewPrevRewards(1))
	if err != nil {
		t.Fatal(err)
	}
	raw := dict.Sample(rand.New(rand.NewPCG(1, 1)), make([]float32, dict.Size()))
	row := make([]float32, p.Width())
	action := []float32{3}
	for i := range 64 {
		p.Slot(i, "a") // slots exist: steady state
	}
	allocs := testing.AllocsPerRun(50, func() {
		for i := range 64 {
			s := p.Slot(i, "a")
			p.Write(row, s, raw, 1)
			p.RecordAction(s, action)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per step", allocs)
	}
}
