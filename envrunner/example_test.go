package envrunner_test

import (
	"fmt"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/env"
	_ "github.com/onnxrl/sampler/env/classic" // registers CartPole-v1
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/models"
)

// A runner over 4 CartPole-v1 sub-environments with the bundled policy, exploring, with GAE:
// each Sample returns a fragment of 50 steps per sub-environment. (It needs the ONNX Runtime
// library: `make onnxruntime` installs it.)
func ExampleRunner() {
	policy, err := models.Bundled("cartpole_mlp")
	if err != nil {
		panic(err)
	}
	be, err := env.ToBaseEnv(func(int) (any, error) { return env.Make("CartPole-v1", nil) },
		env.BaseEnvOptions{NumEnvs: 4, Seed: env.WithSeed(1)})
	if err != nil {
		panic(err)
	}
	r, err := envrunner.New(envrunner.Config{
		Env:     be, // the runner owns it now
		NumEnvs: 4,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{
			envrunner.DefaultPolicyID: {Policy: policy, Action: connectors.ActionConfig{Explore: true}},
		},
		FragmentLength: 50,
		GAE:            &envrunner.GAE{Gamma: 0.99, Lambda: 0.95},
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
	fmt.Println("obs width:", b.ObsWidth, "dist width:", b.DistWidth, "advantages:", len(b.Advantages))
	fmt.Println("env steps so far:", r.Counters().EnvSteps)
	// Output:
	// policies: [default_policy]
	// rows: 200 env steps: 200 valid: true
	// obs width: 4 dist width: 2 advantages: 200
	// env steps so far: 600
}
