// Command floor is the least a sampler can do (package internal/floor), as a command to run
// beside `sample run`: plain Go CartPole-v1 environments (no interface, no VectorEnv), one ONNX
// Runtime session bound once at the batch of all of them, argmax over the logits, nothing kept. It is the floor
// that scripts/bench_floor.sh measures `sample run --env CartPole-v1 --workers 1` against, with
// the same model (the bundled cartpole_mlp by default), the same session options (the CPU
// provider, one intra-op and one inter-op thread), environment i seeded with i as
// `sample run --seed 0` seeds them, and the goroutine locked to its thread as a runner's is.
//
// Usage:
//
//	go run ./benchmarks/floor [--model NAME|PATH] [--num-envs N] [--steps N] [--json]
//
// It prints the env steps per second; with --json, one object
// {"num_envs":N,"num_env_steps":N,"seconds":S,"num_env_steps_sampled_lifetime_throughput":X},
// the field `sample run --json` reports its throughput in. Steps are counted in whole batched
// steps (every environment once), at least --steps of them, as `sample run` counts.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/internal/floor"
	"github.com/onnxrl/sampler/models"
)

func main() {
	model := flag.String("model", "cartpole_mlp", "policy: a bundled model name or an .onnx path (observation 4 floats, 2 logits)")
	n := flag.Int("num-envs", 256, "CartPole-v1 environments, stepped as one batch")
	steps := flag.Int64("steps", 20_000_000, "env steps (rounded up to whole batched steps)")
	asJSON := flag.Bool("json", false, "print one JSON object")
	flag.Parse()
	if err := run(*model, *n, *steps, *asJSON); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(model string, n int, steps int64, asJSON bool) error {
	if n <= 0 || steps <= 0 {
		return fmt.Errorf("--num-envs %d and --steps %d must be positive", n, steps)
	}
	if err := inference.Init(); err != nil {
		return err
	}
	p, err := models.Open(model)
	if err != nil {
		return err
	}
	f, err := floor.New(model, p, n)
	if err != nil {
		return err
	}
	defer f.Close()
	runtime.LockOSThread() // as envrunner.Group locks a runner's goroutine
	t0 := time.Now()
	var done int64
	for done < steps {
		k, err := f.Step()
		if err != nil {
			return err
		}
		done += int64(k)
	}
	sec := time.Since(t0).Seconds()
	if asJSON {
		return json.NewEncoder(os.Stdout).Encode(map[string]any{"num_envs": n, "num_env_steps": done, "seconds": sec,
			"num_env_steps_sampled_lifetime_throughput": float64(done) / sec})
	}
	fmt.Printf("%d env steps of %d CartPole-v1 in %.3f s: %.0f env steps/s\n", done, n, sec, float64(done)/sec)
	return nil
}
