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

// BenchmarkWriter writes CartPole-like batches (4000 rows; 51200, a fragment of 256
// sub-environments) to a file through the queue, recycling them via OnWritten, with one batch
// or with three going round (as a runner's pool of batches does); the producer's view of the
// throughput in rows/s, and the bytes each row takes on disk.
func BenchmarkWriter(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"json", Options{Format: FormatJSON}},
		{"parquet-zstd", Options{Format: FormatParquet, Compression: Zstd}},
		{"parquet-snappy", Options{Format: FormatParquet, Compression: Snappy}},
		{"parquet-none", Options{Format: FormatParquet, Compression: Uncompressed}},
	} {
		for _, n := range []int{4000, 51200} {
			for _, out := range []int{1, 3} {
				b.Run(fmt.Sprintf("%s/rows=%d/batches=%d", tc.name, n, out), func(b *testing.B) {
					free := make(chan *envrunner.MultiAgentBatch, out)
					opts := tc.opts
					opts.MaxFileSize = 64 << 20
					opts.OnWritten = func(m *envrunner.MultiAgentBatch) { free <- m }
					w, err := NewWriter(filepath.Join(b.TempDir(), "x"), opts)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportAllocs()
					for range out {
						free <- single(cartPoleBatch(rand.New(rand.NewPCG(1, 2)), n))
					}
					for b.Loop() {
						if err := w.Write(<-free); err != nil {
							b.Fatal(err)
						}
					}
					if err := w.Close(); err != nil {
						b.Fatal(err)
					}
					rows := float64(n) * float64(b.N)
					b.ReportMetric(rows/b.Elapsed().Seconds(), "rows/s")
					b.ReportMetric(float64(w.Stats().Bytes)/rows, "bytes/row")
				})
			}
		}
	}
}
