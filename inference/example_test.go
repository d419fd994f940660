package inference_test

import (
	"fmt"

	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

// A session bound for batches of up to 64 rows, run at 3 rows. (It needs the runtime, so it
// has no checked output: TestBundledMatchPyTorch in package models checks the numbers.)
func ExampleSession() {
	p, err := models.Bundled("cartpole_mlp")
	if err != nil {
		panic(err)
	}
	sess, err := inference.NewSession(p.Model, inference.Options{Capacity: 64, IntraOpThreads: 1})
	if err != nil {
		panic(err)
	}
	defer sess.Close()

	obs, _ := sess.Input("obs")
	logits, _ := sess.Output("logits")
	if err := sess.SetBatch(3); err != nil {
		panic(err)
	}
	copy(obs.Float32(), []float32{
		0.01, 0.02, 0.03, 0.04,
		-0.5, 0.1, 0.2, -1.0,
		1.0, -1.0, 0.1, 0.5,
	})
	if err := sess.Run(); err != nil {
		panic(err)
	}
	fmt.Println(obs.Shape(), logits.Shape(), len(logits.Float32()))
	// Prints: [3 4] [3 2] 6
}

// Inputs and outputs, with their dynamic dimensions, without the runtime.
func ExampleLoadBytes() {
	p, err := models.Bundled("lstm_policy")
	if err != nil {
		panic(err)
	}
	m, err := inference.LoadBytes("lstm", p.Model.Bytes())
	if err != nil {
		panic(err)
	}
	for _, in := range m.Inputs {
		fmt.Println(in)
	}
	// Output:
	// obs float32[batch,2]
	// state_in_0 float32[1,batch,32]
	// state_in_1 float32[1,batch,32]
}
