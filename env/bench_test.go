package env

import (
	"fmt"
	"testing"
)

// benchLoop drives b with constant actions; every sub-environment is zeroEnv (episodes of
// 1000 steps), so ended episodes are reset inside the loop as a runner would.
func benchLoop(bb *testing.B, b BaseEnv, numEnvs int) {
	var batch, rbatch Batch
	actions := make([]Action, 0, numEnvs)
	act := []float32{1}
	round := func() int {
		batch.Clear()
		if err := b.Poll(&batch); err != nil {
			bb.Fatal(err)
		}
		actions = actions[:0]
		for _, a := range batch.Agents {
			if !a.Terminated && !a.Truncated {
				actions = append(actions, Action{Env: a.Env, Agent: a.Agent, Action: act})
			}
		}
		for _, st := range batch.Envs {
			if st.Truncated || st.Terminated {
				rbatch.Clear()
				if _, err := b.TryReset(st.Env, Seed{}, &rbatch); err != nil {
					bb.Fatal(err)
				}
				for _, a := range rbatch.Agents {
					actions = append(actions, Action{Env: a.Env, Agent: a.Agent, Action: act})
				}
			}
		}
		if err := b.SendActions(actions); err != nil {
			bb.Fatal(err)
		}
		return len(batch.Agents)
	}
	for range 3 { // warm up: buffers reach their size
		round()
	}
	bb.ReportAllocs()
	bb.ResetTimer()
	agents := 0
	for range bb.N {
		agents += round()
	}
	bb.StopTimer()
	if agents > 0 {
		bb.ReportMetric(float64(bb.Elapsed().Nanoseconds())/float64(agents), "ns/agent")
	}
	b.Stop()
}

func zeroMaker(int) (Env, error) { return newZeroEnv(), nil }

// BenchmarkPollSend measures the synchronous BaseEnv adapter's poll / send / reset overhead
// per agent with a trivial environment.
func BenchmarkPollSend(b *testing.B) {
	for _, n := range []int{1, 256, 4096} {
		b.Run(fmt.Sprintf("envs=%d", n), func(bb *testing.B) {
			be, err := NewBaseEnv(zeroMaker, BaseEnvOptions{NumEnvs: n, Seed: WithSeed(1)})
			if err != nil {
				bb.Fatal(err)
			}
			benchLoop(bb, be, n)
		})
	}
}

// BenchmarkVectorPollSend measures the same through NewVectorEnv and NewVectorBaseEnv.
func BenchmarkVectorPollSend(b *testing.B) {
	for _, n := range []int{1, 256, 4096} {
		b.Run(fmt.Sprintf("envs=%d", n), func(bb *testing.B) {
			v, err := NewVectorEnv(zeroMaker, n)
			if err != nil {
				bb.Fatal(err)
			}
			be, err := NewVectorBaseEnv(v, BaseEnvOptions{})
			if err != nil {
				bb.Fatal(err)
			}
			benchLoop(bb, be, n)
		})
	}
}

// BenchmarkRemotePollSend measures RemoteVectorEnv's per-step overhead (goroutine hand-off
// through channels) with a trivial environment; ns/agent is wall time per agent step.
func BenchmarkRemotePollSend(b *testing.B) {
	for _, n := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("envs=%d", n), func(bb *testing.B) {
			r, err := NewRemoteVectorEnv(func(int) (any, error) { return newZeroEnv(), nil },
				RemoteVectorEnvOptions{BaseEnvOptions: BaseEnvOptions{NumEnvs: n}})
			if err != nil {
				bb.Fatal(err)
			}
			benchLoop(bb, r, n)
		})
	}
}

// BenchmarkVectorColumns measures NewVectorBaseEnv driven through Columnar, against the
// bare loop over the same zeroEnvs ("bare": Step and Reset called directly), in the same run.
func BenchmarkVectorColumns(b *testing.B) {
	const n = 256
	b.Run(fmt.Sprintf("columnar/envs=%d", n), func(bb *testing.B) {
		v, err := NewVectorEnv(zeroMaker, n)
		if err != nil {
			bb.Fatal(err)
		}
		be, err := NewVectorBaseEnv(v, BaseEnvOptions{})
		if err != nil {
			bb.Fatal(err)
		}
		ce := be.(Columnar)
		c := ce.Columns()
		var batch Batch
		round := func() int {
			batch.Clear()
			ready, err := ce.PollColumns(&batch)
			if err != nil {
				bb.Fatal(err)
			}
			k := len(ready)
			for _, i := range ready {
				if r := &c.Results[i]; r.Terminated || r.Truncated {
					if _, err := ce.ResetColumns(i, Seed{}, &batch); err != nil {
						bb.Fatal(err)
					}
				}
				c.Actions[i] = 1
			}
			if err := ce.StepColumns(); err != nil {
				bb.Fatal(err)
			}
			return k
		}
		round()
		bb.ReportAllocs()
		bb.ResetTimer()
		agents := 0
		for range bb.N {
			agents += round()
		}
		bb.ReportMetric(float64(bb.Elapsed().Nanoseconds())/float64(agents), "ns/agent")
	})
	b.Run(fmt.Sprintf("bare/envs=%d", n), func(bb *testing.B) {
		envs := make([]*zeroEnv, n)
		obs := make([]float32, n)
		act := []float32{1}
		for i := range envs {
			envs[i] = newZeroEnv()
			if _, err := envs[i].Reset(Seed{}, obs[i:i+1]); err != nil {
				bb.Fatal(err)
			}
		}
		bb.ResetTimer()
		for range bb.N {
			for i, e := range envs {
				r, err := e.Step(act, obs[i:i+1])
				if err != nil {
					bb.Fatal(err)
				}
				if r.Terminated || r.Truncated {
					if _, err := e.Reset(Seed{}, obs[i:i+1]); err != nil {
						bb.Fatal(err)
					}
				}
			}
		}
		bb.ReportMetric(float64(bb.Elapsed().Nanoseconds())/float64(bb.N*n), "ns/agent")
	})
}
