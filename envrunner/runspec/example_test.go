package runspec_test

import (
	"context"
	"fmt"

	"github.com/onnxrl/sampler/envrunner/runspec"
)

// 1,000 steps of CartPole-v1 over 4 sub-environments with a seeded random policy (no model,
// so it runs without ONNX Runtime): what `sample run --model random --num-envs 4 --steps 1000
// --fragment-length 50` samples, as batches and metrics.
func ExampleSample() {
	s := runspec.DefaultSpec()
	s.Model, s.NumEnvs, s.FragmentLength, s.MaxEnvSteps, s.Seed = "random", 4, 50, 1000, 1
	res, err := runspec.Sample(context.Background(), s)
	if err != nil {
		panic(err)
	}
	rows := 0
	for _, b := range res.Batches {
		rows += b.Rows()
	}
	fmt.Println("env steps:", res.Counters.EnvSteps, "rows:", rows, "batches:", len(res.Batches))
	fmt.Println("episodes ended:", res.EpisodeStats().Episodes > 0)
	// Output:
	// env steps: 1000 rows: 1000 batches: 5
	// episodes ended: true
}

// The environment's bundled policy (CartPole-v1's MLP), greedy, for 10 episodes on two
// workers, with GAE. It needs the ONNX Runtime library (`make onnxruntime`), so it is
// compiled but not run as an example; TestSampleEpisodes runs the same with a random policy.
func ExampleSample_bundledPolicy() {
	s := runspec.DefaultSpec()
	s.NumEnvs, s.Workers, s.Explore, s.GAE, s.MaxEpisodes = 8, 2, false, true, 10
	res, err := runspec.Sample(context.Background(), s)
	if err != nil {
		fmt.Println(err) // ONNX Runtime is missing
		return
	}
	st := res.EpisodeStats()
	fmt.Printf("%d episodes, return mean %.1f, %.0f steps/s\n", st.Episodes, st.ReturnMean, res.StepsPerSec())
}
