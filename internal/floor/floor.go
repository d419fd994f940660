// Package floor is the least a sampler can do, the loop the runner and `sample run` are
// measured against (benchmarks/floor, BenchmarkRunner and BenchmarkSampleRun): plain Go
// CartPole-v1 environments (no interface, no VectorEnv), one ONNX Runtime session bound once
// at the batch of all of them, argmax over the logits, nothing kept. Environment i is seeded
// with i, as `sample run --seed 0` seeds its sub-environments.
package floor

import (
	"errors"
	"fmt"
	"time"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/env/classic"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

// Floor holds the environments and the session; Obs and Logits are the session's bound input
// and output, a row of 4 and of 2 values an environment.
type Floor struct {
	Envs   []*classic.CartPole
	Obs    []float32
	Logits []float32
	// InferenceTime is the time spent in the session's runs so far.
	InferenceTime time.Duration

	sess *inference.Session
	act  [1]float32
}

// New binds p's session (the CPU provider, one intra-op and one inter-op thread, as
// `sample run --threads 1`) at a batch of n and resets n CartPole-v1 environments into its
// input. model names p in errors. The runtime must be initialized (inference.Init).
func New(model string, p *models.Policy, n int) (*Floor, error) {
	if n <= 0 {
		return nil, fmt.Errorf("floor: %d environments: want at least 1", n)
	}
	obsName, actName := p.Spec.ObservationInput, p.Spec.ActionOutput
	sess, err := inference.NewSession(p.Model, inference.Options{Device: "cpu", Capacity: n, IntraOpThreads: 1, InterOpThreads: 1})
	if err != nil {
		return nil, err
	}
	f := &Floor{sess: sess}
	if err := f.bind(model, obsName, actName, n); err != nil {
		sess.Close()
		return nil, err
	}
	return f, nil
}

func (f *Floor) bind(model, obsName, actName string, n int) error {
	if err := f.sess.SetBatch(n); err != nil {
		return err
	}
	in, err1 := f.sess.Input(obsName)
	out, err2 := f.sess.Output(actName)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	f.Obs, f.Logits = in.Float32(), out.Float32()
	if len(f.Obs) != 4*n || len(f.Logits) != 2*n {
		return fmt.Errorf("model %s: input %q holds %d values and output %q %d at batch %d; want 4 and 2 a row (CartPole)",
			model, obsName, len(f.Obs), actName, len(f.Logits), n)
	}
	for i := range n {
		c, err := classic.NewCartPole(nil)
		if err != nil {
			return err
		}
		if _, err := c.Reset(env.WithSeed(uint64(i)), f.Obs[i*4:(i+1)*4]); err != nil {
			return err
		}
		f.Envs = append(f.Envs, c)
	}
	return nil
}

// Close releases the session.
func (f *Floor) Close() error { return f.sess.Close() }

// Step runs the model over every environment's observation and steps each with the argmax of
// its logits, writing its next observation in place (the first of a new episode after an
// end). It returns the env steps taken: one an environment.
func (f *Floor) Step() (int, error) {
	t := time.Now()
	if err := f.sess.Run(); err != nil {
		return 0, err
	}
	f.InferenceTime += time.Since(t)
	for i, c := range f.Envs {
		a := float32(0)
		if f.Logits[2*i+1] > f.Logits[2*i] {
			a = 1
		}
		f.act[0] = a
		o := f.Obs[i*4 : (i+1)*4]
		res, err := c.Step(f.act[:], o)
		if err != nil {
			return 0, err
		}
		if res.Terminated || res.Truncated {
			if _, err := c.Reset(env.Seed{}, o); err != nil {
				return 0, err
			}
		}
	}
	return len(f.Envs), nil
}
