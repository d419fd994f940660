package envrunner

import (
	"errors"
	"testing"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

// TestFastPathAfterFailedRun fails a model run while the sub-environments are on the
// columnar fast path: none of them may stay on it (its rows got no action, and the fast path
// takes a waiting agent for granted), and their episodes' totals must match their agents'.
func TestFastPathAfterFailedRun(t *testing.T) {
	if err := inference.Init(); err != nil {
		t.Skipf("ONNX Runtime not available (run `make onnxruntime`): %v", err)
	}
	p, err := models.Bundled("cartpole_mlp")
	if err != nil {
		t.Fatal(err)
	}
	cfg := env.Config{"max_episode_steps": 9}
	v, err := env.NewVectorEnv(func(int) (env.Env, error) {
		e, err := env.Make("CartPole-v1", cfg)
		if err != nil {
			return nil, err
		}
		return e.Env(), nil
	}, 4)
	if err != nil {
		t.Fatal(err)
	}
	be, err := env.NewVectorBaseEnv(v, env.BaseEnvOptions{Seed: env.WithSeed(3)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{Env: be, NumEnvs: 4, Seed: 1, FragmentLength: 5,
		Policies: map[PolicyID]PolicyConfig{DefaultPolicyID: {Policy: p, Action: connectors.ActionConfig{Explore: true}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	col, ok := r.proto.(*columnProtocol)
	if !ok {
		t.Fatal("the runner does not take the VectorEnv's columns")
	}
	for range 3 {
		if err := r.Step(); err != nil {
			t.Fatal(err)
		}
	}
	fast := 0
	for e, a := range col.recs {
		if col.fast(a, e) {
			fast++
		}
	}
	if fast == 0 {
		t.Fatal("no sub-environment is on the fast path")
	}
	planned := errors.New("planned failure")
	r.runHook = func() error { return planned }
	if err := r.Step(); !errors.Is(err, planned) {
		t.Fatalf("Step with a failing model run: %v, want the run's error", err)
	}
	r.runHook = nil
	for e, a := range col.recs {
		if col.fast(a, e) || a.pending {
			t.Errorf("sub-environment %d after the failed run: fast %v, agent pending %v", e, col.fast(a, e), a.pending)
		}
		if ep := a.ep; ep != nil && (ep.Length() != a.steps || ep.TotalReward() != a.reward) {
			t.Errorf("sub-environment %d: episode length %d return %v, its agent's %d and %v", e, ep.Length(), ep.TotalReward(), a.steps, a.reward)
		}
	}
	// The sub-environments wait for the actions they never got: a failed run ends the
	// runner's sampling, so a later step fails with the run's error and takes no transition.
	steps := r.Counters().AgentSteps
	if err := r.Step(); !errors.Is(err, planned) {
		t.Fatalf("Step after the failed run: %v, want the run's error again", err)
	}
	if got := r.Counters().AgentSteps; got != steps {
		t.Errorf("a step after the failed run took %d agent steps, want 0", got-steps)
	}
}
