package output

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/onnxrl/sampler/envrunner"
)

// BenchmarkAppendJSON encodes CartPole-like batches (obs width 4, Discrete(2), dist width 2,
// logp and value predictions) into a reused buffer; MB/s is the JSON produced.
func BenchmarkAppendJSON(b *testing.B) {
	for _, n := range []int{200, 4000} {
		b.Run(fmt.Sprintf("cartpole/rows=%d", n), func(b *testing.B) {
			m := single(cartPoleBatch(rand.New(rand.NewPCG(1, 2)), n))
			buf := AppendJSON(nil, m)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				buf = AppendJSON(buf[:0], m)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
	b.Run("multiagent/policies=4/rows=1000", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(3, 4))
		m := &envrunner.MultiAgentBatch{EnvSteps: 1000}
		for p := range 4 {
			*m.Policy(fmt.Sprintf("policy_%d", p)) = *cartPoleBatch(rng, 1000)
		}
		buf := AppendJSON(nil, m)
		b.SetBytes(int64(len(buf)))
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			buf = AppendJSON(buf[:0], m)
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	line := AppendJSON(nil, single(cartPoleBatch(rand.New(rand.NewPCG(1, 2)), 4000)))
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(line); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriter writes 4000-row batches to a file through the queue, recycling them via
// OnWritten; the producer's view of the throughput.
func BenchmarkWriter(b *testing.B) {
	m := single(cartPoleBatch(rand.New(rand.NewPCG(1, 2)), 4000))
	free := make(chan *envrunner.MultiAgentBatch, 1)
	w, err := NewWriter(filepath.Join(b.TempDir(), "x.jsonl"), Options{
		MaxFileSize: 64 << 20,
		OnWritten:   func(m *envrunner.MultiAgentBatch) { free <- m },
	})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(AppendJSON(nil, m)) + 1))
	b.ReportAllocs()
	free <- m
	for b.Loop() {
		if err := w.Write(<-free); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}
