// Command floor is the least a sampler can do, as a command to run beside `sample run`: plain
// Go CartPole-v1 environments (no interface, no VectorEnv), one ONNX Runtime session bound
// once at the batch of all of them, argmax over the logits, nothing kept. It is the floor
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
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/env/classic"
	"github.com/onnxrl/sampler/inference"
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
	f, err := newFloor(model, p, n)
	if err != nil {
		return err
	}
	defer f.sess.Close()
	runtime.LockOSThread() // as envrunner.Group locks a runner's goroutine
	t0 := time.Now()
	var done int64
	for done < steps {
		if err := f.step(); err != nil {
			return err
		}
		done += int64(n)
	}
	sec := time.Since(t0).Seconds()
	if asJSON {
		return json.NewEncoder(os.Stdout).Encode(map[string]any{"num_envs": n, "num_env_steps": done, "seconds": sec,
			"num_env_steps_sampled_lifetime_throughput": float64(done) / sec})
	}
	fmt.Printf("%d env steps of %d CartPole-v1 in %.3f s: %.0f env steps/s\n", done, n, sec, float64(done)/sec)
	return nil
}

// floor holds the environments and the session; obs and logits are the session's bound
// input and output.
type floor struct {
	envs   []*classic.CartPole
	sess   *inference.Session
	obs    []float32
	logits []float32
	act    [1]float32
}

func newFloor(model string, p *models.Policy, n int) (*floor, error) {
	obsName, actName := p.Spec.ObservationInput, p.Spec.ActionOutput
	sess, err := inference.NewSession(p.Model, inference.Options{Device: "cpu", Capacity: n, IntraOpThreads: 1, InterOpThreads: 1})
	if err != nil {
		return nil, err
	}
	f := &floor{sess: sess}
	if err := sess.SetBatch(n); err != nil {
		sess.Close()
		return nil, err
	}
	in, err1 := sess.Input(obsName)
	out, err2 := sess.Output(actName)
	if err := errors.Join(err1, err2); err != nil {
		sess.Close()
		return nil, err
	}
	f.obs, f.logits = in.Float32(), out.Float32()
	if len(f.obs) != 4*n || len(f.logits) != 2*n {
		sess.Close()
		return nil, fmt.Errorf("model %s: input %q holds %d values and output %q %d at batch %d; want 4 and 2 a row (CartPole)",
			model, obsName, len(f.obs), actName, len(f.logits), n)
	}
	for i := range n {
		c, err := classic.NewCartPole(nil)
		if err != nil {
			sess.Close()
			return nil, err
		}
		if _, err := c.Reset(env.WithSeed(uint64(i)), f.obs[i*4:(i+1)*4]); err != nil {
			sess.Close()
			return nil, err
		}
		f.envs = append(f.envs, c)
	}
	return f, nil
}

// step runs the model over every environment's observation and steps each with the argmax
// of its logits, writing its next observation in place (the first of a new episode after an
// end).
func (f *floor) step() error {
	if err := f.sess.Run(); err != nil {
		return err
	}
	for i, c := range f.envs {
		a := float32(0)
		if f.logits[2*i+1] > f.logits[2*i] {
			a = 1
		}
		f.act[0] = a
		o := f.obs[i*4 : (i+1)*4]
		res, err := c.Step(f.act[:], o)
		if err != nil {
			return err
		}
		if res.Terminated || res.Truncated {
			if _, err := c.Reset(env.Seed{}, o); err != nil {
				return err
			}
		}
	}
	return nil
}
