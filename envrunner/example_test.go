package envrunner_test

import (
	"fmt"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/env"
	_ "github.com/onnxrl/sampler/env/classic" // registers CartPole-v1
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/models"
)

// A runner over 4 CartPole-v1 sub-environments with a seeded random policy (no model, so it
// runs without ONNX Runtime; see ExampleRunner_bundledPolicy for a model): each Sample
// returns a fragment of 50 steps per sub-environment.
func ExampleRunner() {
	be, err := env.MakeBaseEnv("CartPole-v1", nil, env.BaseEnvOptions{NumEnvs: 4, Seed: env.WithSeed(1)})
	if err != nil {
		panic(err)
	}
	cp, _ := env.Make("CartPole-v1", nil)
	spec := cp.Env() // for its spaces
	r, err := envrunner.New(envrunner.Config{
		Env:     be, // the runner owns it now
		NumEnvs: 4,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{
			envrunner.DefaultPolicyID: {Random: true, ObservationSpace: spec.ObservationSpace(), ActionSpace: spec.ActionSpace()},
		},
		FragmentLength: 50,
		Seed:           7,
	})
	if err != nil {
		panic(err)
	}
	defer r.Close()

	var batch envrunner.MultiAgentBatch // reused by every Sample
	for range 3 {
		if err := r.Sample(&batch); err != nil {
			panic(err)
		}
	}
	b := batch.PolicyBatches[envrunner.DefaultPolicyID]
	fmt.Println("policies:", batch.PolicyIDs())
	fmt.Println("rows:", b.Count, "env steps:", batch.EnvSteps, "valid:", b.Validate() == nil)
	fmt.Println("obs width:", b.ObsWidth, "env steps so far:", r.Counters().EnvSteps)
	// Output:
	// policies: [default_policy]
	// rows: 200 env steps: 200 valid: true
	// obs width: 4 env steps so far: 600
}

// The bundled CartPole policy, exploring, with GAE. It needs the ONNX Runtime library
// (`make onnxruntime` installs it), so it is compiled but not run as an example; the tests
// that need the runtime (TestColumnarMatchesPollSend's "explore gae truncations") run such a
// configuration and skip without it.
func ExampleRunner_bundledPolicy() {
	policy, err := models.Bundled("cartpole_mlp")
	if err != nil {
		fmt.Println(err) // ONNX Runtime or the model is missing
		return
	}
	be, err := env.MakeBaseEnv("CartPole-v1", nil, env.BaseEnvOptions{NumEnvs: 4, Seed: env.WithSeed(1)})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := envrunner.New(envrunner.Config{
		Env:     be,
		NumEnvs: 4,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{
			envrunner.DefaultPolicyID: {Policy: policy, Action: connectors.ActionConfig{Explore: true}},
		},
		FragmentLength: 50,
		GAE:            &envrunner.GAE{Gamma: 0.99, Lambda: 0.95},
		Seed:           7,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	var batch envrunner.MultiAgentBatch
	if err := r.Sample(&batch); err != nil {
		fmt.Println(err)
		return
	}
	b := batch.PolicyBatches[envrunner.DefaultPolicyID]
	fmt.Println("rows:", b.Count, "dist width:", b.DistWidth, "advantages:", len(b.Advantages))
}
