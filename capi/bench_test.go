package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/onnxrl/sampler/externalenv/server"
)

// BenchmarkPolicyAct: what the C API adds to a batch inference. Each round times the same
// greedy call (with log-probabilities and values) through C (a C loop calling
// onnxrl_policy_act, which crosses into Go, looks up the handle and reads C memory) and
// through the Go API it wraps (policy.act), alternating; it reports both per call, the
// difference and the ratio.
//
//	go test -run '^$' -bench BenchmarkPolicyAct -benchtime 20000x ./capi/
func BenchmarkPolicyAct(b *testing.B) {
	needRuntime(b)
	for _, n := range []int{1, 256} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			p, err := openPolicy("cartpole_mlp", nil)
			if err != nil {
				b.Fatal(err)
			}
			defer p.close()
			h := table.add(kindPolicy, p)
			defer table.remove(h, kindPolicy)
			obs := make([]float32, 4*n)
			for i := range obs {
				obs[i] = float32(i%7-3) / 100
			}
			out := server.ActOutputs{Actions: make([]float32, n), LogP: make([]float32, n), Values: make([]float32, n)}
			goCall := func(iters int) {
				for range iters {
					if err := p.act(obs, n, false, out); err != nil {
						b.Fatal(err)
					}
				}
			}
			cCall := func(iters int) {
				if s := benchActC(h, obs, n, out.Actions, out.LogP, out.Values, iters); s != statusOK {
					b.Fatalf("status %d", s)
				}
			}
			goCall(100) // warm up both
			cCall(100)
			const rounds = 20
			per := max(b.N/rounds, 1)
			var tGo, tC time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for range rounds {
				start := time.Now()
				cCall(per)
				tC += time.Since(start)
				start = time.Now()
				goCall(per)
				tGo += time.Since(start)
			}
			calls := float64(rounds * per)
			cNs, goNs := float64(tC.Nanoseconds())/calls, float64(tGo.Nanoseconds())/calls
			b.ReportMetric(cNs, "c-ns/call")
			b.ReportMetric(goNs, "go-ns/call")
			b.ReportMetric(cNs-goNs, "added-ns/call")
			b.ReportMetric(cNs/goNs, "c/go")
		})
	}
}
