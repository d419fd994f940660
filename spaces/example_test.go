package spaces_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/onnxrl/sampler/spaces"
)

func Example() {
	obs, err := spaces.Unmarshal([]byte(`{"type":"Dict","spaces":{
		"pos":  {"type":"Box","low":-1,"high":1,"shape":[2]},
		"mode": {"type":"Discrete","n":3,"start":1}}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(spaces.String(obs))
	fmt.Println("size", obs.Size(), "flatdim", obs.FlatDim())

	// Raw layout in sorted key order: mode, then pos.
	raw := []float32{2, 0.5, -0.25}
	fmt.Println("contains", obs.Contains(raw))
	fmt.Println("flat", obs.Flatten(make([]float32, obs.FlatDim()), raw))

	rng := rand.New(rand.NewPCG(1, 2))
	sample := obs.Sample(rng, make([]float32, obs.Size()))
	fmt.Println("sample contained", obs.Contains(sample))

	b, _ := json.Marshal(obs)
	fmt.Println(string(b))

	_, err = spaces.Unmarshal([]byte(`{"type":"Dict","spaces":{"pos":{"type":"Box","low":0,"high":1,"shape":[3,-2]}}}`))
	fmt.Println(err)
	// Output:
	// Dict(mode: Discrete(3, start=1), pos: Box(-1.0, 1.0, (2,), float32))
	// size 3 flatdim 5
	// contains true
	// flat [0 1 0 0.5 -0.25]
	// sample contained true
	// {"type":"Dict","spaces":{"mode":{"type":"Discrete","n":3,"start":1},"pos":{"type":"Box","low":-1,"high":1,"shape":[2],"dtype":"float32"}}}
	// spaces: Dict.spaces["pos"].shape[1]: must be positive, got -2
}

func ExampleBox_Sample() {
	box := spaces.NewBox(0, 10, 3)
	rng := rand.New(rand.NewPCG(7, 7))
	dst := make([]float32, box.Size())
	box.Sample(rng, dst)
	fmt.Println(box.Contains(dst))
	// Output: true
}
