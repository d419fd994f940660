package envrunner

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

// TestFailedRunReleasesSubEnvironments fails a model run after a Poll, so that the polled
// sub-environments never get their actions: Close must still return at once and end every
// goroutine of the environment, and a RemoteVectorEnv (whose sub-environments wait on their
// own goroutines) must make the next steps fail instead of returning nothing forever.
func TestFailedRunReleasesSubEnvironments(t *testing.T) {
	if err := inference.Init(); err != nil {
		t.Skipf("ONNX Runtime not available (run `make onnxruntime`): %v", err)
	}
	p, err := models.Bundled("cartpole_mlp")
	if err != nil {
		t.Fatal(err)
	}
	mk := func(int) (any, error) { return env.Make("CartPole-v1", nil) }
	kinds := []struct {
		name string
		make func() (env.BaseEnv, error)
	}{
		{"remote/wait=0", func() (env.BaseEnv, error) {
			return env.NewRemoteVectorEnv(mk, env.RemoteVectorEnvOptions{BaseEnvOptions: env.BaseEnvOptions{NumEnvs: 4}})
		}},
		{"remote/wait=all", func() (env.BaseEnv, error) {
			return env.NewRemoteVectorEnv(mk, env.RemoteVectorEnvOptions{BaseEnvOptions: env.BaseEnvOptions{NumEnvs: 4}, BatchWait: env.WaitAll})
		}},
		{"sync", func() (env.BaseEnv, error) {
			return env.ToBaseEnv(mk, env.BaseEnvOptions{NumEnvs: 4})
		}},
		{"vector", func() (env.BaseEnv, error) {
			v, err := env.NewVectorEnv(func(int) (env.Env, error) {
				e, err := env.Make("CartPole-v1", nil)
				if err != nil {
					return nil, err
				}
				return e.Env(), nil
			}, 4)
			if err != nil {
				return nil, err
			}
			return env.NewVectorBaseEnv(v, env.BaseEnvOptions{})
		}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			be, err := k.make()
			if err != nil {
				t.Fatal(err)
			}
			r, err := New(Config{Env: be, NumEnvs: 4, Seed: 1, FragmentLength: 5,
				Policies: map[PolicyID]PolicyConfig{DefaultPolicyID: {Policy: p, Action: connectors.ActionConfig{Explore: true}}}})
			if err != nil {
				be.Stop()
				t.Fatal(err)
			}
			for range 3 {
				if err := r.Step(); err != nil {
					t.Fatal(err)
				}
			}
			planned := errors.New("planned inference failure")
			r.runHook = func() error { return planned }
			if err := r.Step(); !errors.Is(err, planned) {
				t.Fatalf("Step with a failing model run: %v", err)
			}
			r.runHook = nil
			// The polled sub-environments wait for actions that never come: every later Step
			// fails with the run's error (sampling is over) rather than idling forever.
			for range 3 {
				if err := r.Step(); !errors.Is(err, planned) {
					t.Fatalf("Step after the failed run: %v, want the run's error again", err)
				}
			}
			var mb MultiAgentBatch
			if err := r.Sample(&mb); !errors.Is(err, planned) {
				t.Fatalf("Sample after the failed run: %v, want the run's error", err)
			}
			start := time.Now()
			if err := r.Close(); err != nil {
				t.Fatalf("Close after the failed run: %v", err)
			}
			if took := time.Since(start); took > time.Second {
				t.Fatalf("Close took %v", took)
			}
			if rv, ok := be.(*env.RemoteVectorEnv); ok && rv.Running() != 0 {
				t.Fatalf("%d sub-environment goroutines left after Close", rv.Running())
			}
			deadline := time.Now().Add(2 * time.Second)
			for runtime.NumGoroutine() > before {
				if time.Now().After(deadline) {
					t.Fatalf("goroutines: %d after Close, %d before", runtime.NumGoroutine(), before)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
