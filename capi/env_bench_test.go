package main

import (
	"fmt"
	"testing"
)

// BenchmarkEnvGetActions: the episode API's per-call path, as a vectorized simulator drives
// it: n episodes started once, then get_actions for all of them each round (the ids given as
// bytes, as from C), no output file. It reports the microseconds per call and per episode.
//
//	go test -run '^$' -bench BenchmarkEnvGetActions -benchtime 2000x ./capi/
func BenchmarkEnvGetActions(b *testing.B) {
	needRuntime(b)
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("episodes=%d", n), func(b *testing.B) {
			e, err := openEnv("cartpole_mlp", []byte(fmt.Sprintf(`{"explore": false, "max_episodes": %d, "max_wait_us": 0}`, n)))
			if err != nil {
				b.Fatal(err)
			}
			defer e.close()
			ids := make([][]byte, n)
			for i := range ids {
				id, err := e.start(nil, true)
				if err != nil {
					b.Fatal(err)
				}
				ids[i] = []byte(id) // a copy: as from C, not the string ExternalEnv returned
			}
			obs, acts := make([]float32, 4*n), make([]float32, n)
			for i := range obs {
				obs[i] = float32(i%7-3) / 100
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := e.getActions(ids, obs, acts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N)/float64(n), "us/episode")
		})
	}
}
