package floor

import (
	"testing"

	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

// TestFloorSteps steps the floor and checks that its environments moved and restarted: the
// observations change from step to step, and within 600 steps every CartPole-v1 episode
// ends (at the latest at its 500-step limit) and is reset in place.
func TestFloorSteps(t *testing.T) {
	if err := inference.Init(); err != nil {
		t.Skipf("ONNX Runtime not available (run `make onnxruntime`): %v", err)
	}
	p, err := models.Open("cartpole_mlp")
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	f, err := New("cartpole_mlp", p, n)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before := append([]float32(nil), f.Obs...)
	if k, err := f.Step(); err != nil || k != n {
		t.Fatalf("Step: %d env steps, %v; want %d", k, err, n)
	}
	for i := range n {
		if f.Obs[4*i] == before[4*i] && f.Obs[4*i+2] == before[4*i+2] {
			t.Errorf("environment %d did not move: %v", i, f.Obs[4*i:4*i+4])
		}
	}
	for range 600 {
		if _, err := f.Step(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range f.Envs {
		if c.ElapsedSteps() > 500 {
			t.Errorf("environment %d: %d steps in its episode, want an end and a reset within 500", i, c.ElapsedSteps())
		}
	}
	if f.InferenceTime <= 0 {
		t.Errorf("InferenceTime %v after 601 steps", f.InferenceTime)
	}
	if _, err := New("cartpole_mlp", p, 0); err == nil {
		t.Error("New with 0 environments: no error")
	}
}
