package inference

import (
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// BenchmarkNativeVsCPU runs the bundled MLP and LSTM policies through the CPU provider and the
// native provider's host backend, alternating run by run in one loop (both single-threaded:
// IntraOpThreads 1), and reports each one's time per run and "throughput-native/cpu", native
// runs/s divided by CPU-provider runs/s: above 1 = native faster. (benchmarks/epbench measures
// six policy shapes, one and two threads.)
func BenchmarkNativeVsCPU(b *testing.B) {
	needNative(b)
	for _, model := range []string{"cartpole_mlp", "lstm_policy"} {
		m, err := LoadFile("../models/" + model + ".onnx")
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{1, 256, 4096} {
			b.Run(fmt.Sprintf("%s/batch=%d", model, n), func(b *testing.B) {
				cpu, err := NewSession(m, Options{Capacity: n, IntraOpThreads: 1, InterOpThreads: 1})
				if err != nil {
					b.Fatal(err)
				}
				defer cpu.Close()
				nat, err := NewSession(m, Options{Device: "native", Capacity: n, IntraOpThreads: 1, InterOpThreads: 1})
				if err != nil {
					b.Fatal(err)
				}
				defer nat.Close()
				if err := cpu.SetBatch(n); err != nil {
					b.Fatal(err)
				}
				if err := nat.SetBatch(n); err != nil {
					b.Fatal(err)
				}
				fillInputs(b, rand.New(rand.NewSource(1)), cpu, nat)
				for i := 0; i < 3; i++ { // warm both
					if err := cpu.Run(); err != nil {
						b.Fatal(err)
					}
					if err := nat.Run(); err != nil {
						b.Fatal(err)
					}
				}
				tc, tn := alternate(b, cpu, nat)
				b.ReportMetric(float64(tc.Nanoseconds())/float64(b.N), "cpu-ns/run")
				b.ReportMetric(float64(tn.Nanoseconds())/float64(b.N), "native-ns/run")
				b.ReportMetric(float64(tc)/float64(tn), "throughput-native/cpu")
			})
		}
	}
}

// BenchmarkNativeCUDAVsCPU runs the bundled MLP and LSTM policies through the CPU provider
// (the runtime's default threads: every core) and the native provider's CUDA backend on GPU 0,
// alternating run by run, at batch 256, 4,096 and 65,536. Both take and give CPU tensors, so
// the CUDA figures include the copies to and from the GPU. It reports each one's time per run,
// the CUDA backend's samples per second, and cpu-time/cuda-time (above 1 = CUDA faster).
// Skips without a GPU (scripts/device-check.sh runs it on one).
func BenchmarkNativeCUDAVsCPU(b *testing.B) {
	needCUDA(b)
	for _, model := range []string{"cartpole_mlp", "lstm_policy"} {
		m, err := LoadFile("../models/" + model + ".onnx")
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{256, 4096, 65536} {
			b.Run(fmt.Sprintf("%s/batch=%d", model, n), func(b *testing.B) {
				cpu, err := NewSession(m, Options{Capacity: n})
				if err != nil {
					b.Fatal(err)
				}
				defer cpu.Close()
				gpu, err := NewSession(m, Options{Device: "native:cuda:0", Capacity: n})
				if err != nil {
					b.Fatal(err)
				}
				defer gpu.Close()
				for _, s := range []*Session{cpu, gpu} {
					if err := s.SetBatch(n); err != nil {
						b.Fatal(err)
					}
				}
				fillInputs(b, rand.New(rand.NewSource(1)), cpu, gpu)
				for i := 0; i < 3; i++ { // warm both (the CUDA backend captures its graph here)
					if err := cpu.Run(); err != nil {
						b.Fatal(err)
					}
					if err := gpu.Run(); err != nil {
						b.Fatal(err)
					}
				}
				tc, tg := alternate(b, cpu, gpu)
				b.ReportMetric(float64(tc.Nanoseconds())/1e3/float64(b.N), "cpu-us/run")
				b.ReportMetric(float64(tg.Nanoseconds())/1e3/float64(b.N), "cuda-us/run")
				b.ReportMetric(float64(n)*float64(b.N)/tg.Seconds(), "cuda-samples/s")
				b.ReportMetric(float64(tc)/float64(tg), "cpu-time/cuda-time")
			})
		}
	}
}

// alternate runs a then c, b.N times each, alternating (allocations reported), and returns the
// time each took in all.
func alternate(b *testing.B, a, c *Session) (ta, tc time.Duration) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := a.Run(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
		ta += t1.Sub(t0)
		tc += time.Since(t1)
	}
	return ta, tc
}
