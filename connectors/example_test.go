package connectors_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/spaces"
)

// Actions, log-probabilities and entropies of a categorical policy over given logits.
func ExampleActionPipeline() {
	act := &spaces.Discrete{N: 3}
	dist, err := connectors.NewDistribution("categorical", act)
	if err != nil {
		panic(err)
	}
	p, err := connectors.NewActionPipeline(dist, act, connectors.ActionConfig{Explore: false}, 2)
	if err != nil {
		panic(err)
	}
	logits := []float32{
		0, 0, 0, // row 0: uniform
		1, 3, 0, // row 1
	}
	rng := rand.New(rand.NewPCG(1, 0)) // owned by the runner; not used for the mode
	p.Compute(rng, 2, logits, nil)
	for i := range 2 {
		fmt.Printf("row %d: action %v logp %.4f entropy %.4f\n", i, p.Action(i), p.LogP(i), dist.Entropy(p.DistInputs(i)))
	}
	// Output:
	// row 0: action [0] logp -1.0986 entropy 1.0986
	// row 1: action [1] logp -0.1698 entropy 0.5243
}

// One agent's observation through flatten and a frame stack of 2.
func ExampleAgentPipeline() {
	obs := spaces.NewDict(map[string]spaces.Space{
		"pos":  spaces.NewBox(-1, 1, 2),
		"mode": &spaces.Discrete{N: 3},
	})
	p, err := connectors.NewAgentPipeline(obs, connectors.NewFlatten(obs), connectors.NewFrameStack(2))
	if err != nil {
		panic(err)
	}
	row := make([]float32, p.Width())
	slot := p.Slot(0, "agent0")
	p.Write(row, slot, []float32{2, 0.5, -0.5}, 0) // raw layout: mode, pos
	fmt.Println(row)
	p.Write(row, slot, []float32{0, 0.25, 0}, 0)
	fmt.Println(row)
	// Output:
	// [0 0 1 0.5 -0.5 0 0 1 0.5 -0.5]
	// [0 0 1 0.5 -0.5 1 0 0 0.25 0]
}
