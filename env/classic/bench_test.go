package classic

import (
	"testing"

	"github.com/onnxrl/sampler/env"
)

// BenchmarkStep measures one Step (with a Reset whenever an episode ends) per op.
func BenchmarkStep(b *testing.B) {
	for _, name := range singleNames {
		b.Run(name, func(b *testing.B) {
			e := mustMake(b, name, nil)
			obs := make([]float32, e.ObservationSpace().Size())
			act := make([]float32, e.ActionSpace().Size())
			if _, err := e.Reset(env.WithSeed(1), obs); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				act[0] = float32(i % 2)
				i++
				res, err := e.Step(act, obs)
				if err != nil {
					b.Fatal(err)
				}
				if res.Terminated || res.Truncated {
					if _, err := e.Reset(env.Seed{}, obs); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
		})
	}
	b.Run("MultiAgentCartPole/agents=4", func(b *testing.B) {
		m, err := NewMultiAgentCartPole(env.Config{"num_agents": 4})
		if err != nil {
			b.Fatal(err)
		}
		var out env.MultiAgentStep
		if err := m.Reset(env.WithSeed(1), &out); err != nil {
			b.Fatal(err)
		}
		acts := make([]env.AgentAction, 0, 4)
		vals := [2][]float32{{0}, {1}}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			acts = acts[:0]
			for _, a := range out.Agents {
				if !a.Terminated && !a.Truncated {
					acts = append(acts, env.AgentAction{ID: a.ID, Action: vals[i%2]})
				}
			}
			i++
			if err := m.Step(acts, &out); err != nil {
				b.Fatal(err)
			}
			if out.AllTerminated || out.AllTruncated {
				if err := m.Reset(env.Seed{}, &out); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
	})
}

// BenchmarkReset measures one Reset per op.
func BenchmarkReset(b *testing.B) {
	for _, name := range singleNames {
		b.Run(name, func(b *testing.B) {
			e := mustMake(b, name, nil)
			obs := make([]float32, e.ObservationSpace().Size())
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Reset(env.Seed{}, obs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
