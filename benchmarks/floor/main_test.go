package main

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
	f, err := newFloor("cartpole_mlp", p, n)
	if err != nil {
		t.Fatal(err)
	}
	defer f.sess.Close()
	before := append([]float32(nil), f.obs...)
	if err := f.step(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if f.obs[4*i] == before[4*i] && f.obs[4*i+2] == before[4*i+2] {
			t.Errorf("environment %d did not move: %v", i, f.obs[4*i:4*i+4])
		}
	}
	for range 600 {
		if err := f.step(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range f.envs {
		if c.ElapsedSteps() > 500 {
			t.Errorf("environment %d: %d steps in its episode, want an end and a reset within 500", i, c.ElapsedSteps())
		}
	}
	if err := run("cartpole_mlp", 0, 10, false); err == nil {
		t.Error("run with --num-envs 0: no error")
	}
}
