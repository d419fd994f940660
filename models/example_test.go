package models_test

import (
	"fmt"

	"github.com/onnxrl/sampler/models"
)

// The spec of a bundled recurrent policy, and why each role was decided.
func ExampleBundled() {
	p, err := models.Bundled("gru_policy")
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Spec.ObservationInput, p.Spec.ActionOutput, p.Spec.ValueOutput, p.Spec.State, p.Spec.Distribution)

	// Auto-detection alone, as for a model that comes without a spec.
	auto, err := models.Resolve(p.Model, nil, "none")
	if err != nil {
		panic(err)
	}
	for _, d := range auto.Decisions[:3] {
		fmt.Printf("%s = %s (%s)\n", d.Role, d.Value, d.Reason)
	}
	// Output:
	// obs action_logits vf [{h_in h_out}] categorical
	// observation_input = obs (common export name)
	// action_output = action_logits (common export name)
	// value_output = vf (common export name)
}
