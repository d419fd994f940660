// Command custom_env defines an environment in Go, registers it by name, and samples it with
// a runner: the shape of using the sampler as a library. (The README shows this file; its
// test runs it.)
package main

import (
	"fmt"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/spaces"
)

// Corridor: the agent starts in cell 0 of a corridor and is rewarded for reaching the last
// cell; action 0 steps left, 1 steps right. The observation is the position in [0, 1].
type Corridor struct {
	cells, pos, t int
}

func (c *Corridor) ObservationSpace() spaces.Space { return spaces.NewBox(0, 1, 1) }
func (c *Corridor) ActionSpace() spaces.Space      { return &spaces.Discrete{N: 2} }

// Reset and Step write the observation into obs, a slice the runner owns.
func (c *Corridor) Reset(seed env.Seed, obs []float32) (env.Info, error) {
	c.pos, c.t = 0, 0
	obs[0] = 0
	return nil, nil
}

func (c *Corridor) Step(action []float32, obs []float32) (env.StepResult, error) {
	if action[0] == 1 {
		c.pos = min(c.pos+1, c.cells-1)
	} else {
		c.pos = max(c.pos-1, 0)
	}
	c.t++
	obs[0] = float32(c.pos) / float32(c.cells-1)
	done := c.pos == c.cells-1
	r := env.StepResult{Terminated: done, Truncated: !done && c.t >= 100}
	if done {
		r.Reward = 1
	}
	return r, nil
}

func main() {
	// Registered names work everywhere a name does, `sample run --env Corridor-v0` included
	// in a binary that imports this package.
	env.Register("Corridor-v0", func(cfg env.Config) (any, error) {
		n, err := cfg.Int("cells", 5)
		if err != nil {
			return nil, err
		}
		return &Corridor{cells: n}, nil
	})
	be, err := env.MakeBaseEnv("Corridor-v0", env.Config{"cells": 4}, env.BaseEnvOptions{NumEnvs: 8, Seed: env.WithSeed(1)})
	if err != nil {
		panic(err)
	}
	probe := &Corridor{}
	r, err := envrunner.New(envrunner.Config{
		Env: be, NumEnvs: 8, Seed: 1, FragmentLength: 50,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{
			// Random actions need no model; for a policy set Policy: models.Load("policy.onnx").
			envrunner.DefaultPolicyID: {Random: true, ObservationSpace: probe.ObservationSpace(), ActionSpace: probe.ActionSpace()},
		},
	})
	if err != nil {
		panic(err)
	}
	defer r.Close()
	var batch envrunner.MultiAgentBatch // reused by every Sample
	rows := 0
	for range 10 { // 10 fragments of 50 steps per sub-environment
		if err := r.Sample(&batch); err != nil {
			panic(err)
		}
		rows += batch.PolicyBatches[envrunner.DefaultPolicyID].Count
	}
	ms := r.Metrics(nil)
	ret := 0.0
	for _, m := range ms {
		ret += m.EpisodeReturn
	}
	fmt.Printf("episodes: %d, mean return %.2f, sampled rows: %d\n", len(ms), ret/float64(len(ms)), rows)
}
