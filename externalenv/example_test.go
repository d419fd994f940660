package externalenv_test

import (
	"context"
	"fmt"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/spaces"
)

// A simulator that runs one episode of three steps through the API, and a stand-in sampler
// (an envrunner.Runner in real use) that polls and always answers action 1.
func ExampleExternalEnv() {
	e, err := externalenv.New(externalenv.Options{
		ObservationSpace: spaces.NewBox(-10, 10, 1), ActionSpace: &spaces.Discrete{N: 2},
		MaxConcurrentEpisodes: 4,
	})
	if err != nil {
		panic(err)
	}
	e.Start(context.Background(), func(ctx context.Context, e *externalenv.ExternalEnv) error {
		id, err := e.StartEpisode("demo", true)
		if err != nil {
			return err
		}
		x := float32(0)
		for range 3 {
			act, err := e.GetAction(ctx, id, []float32{x})
			if err != nil {
				return err
			}
			x += act[0]
			if err := e.LogReturns(id, 1, nil); err != nil {
				return err
			}
		}
		return e.EndEpisode(id, []float32{x})
	})
	var b env.Batch
	for {
		b.Clear()
		if err := e.Poll(&b); err != nil {
			fmt.Println(err)
			break
		}
		var actions []env.Action
		for _, a := range b.Agents {
			fmt.Printf("env %d obs %v reward %v terminated %v\n", a.Env, a.Obs, a.Reward, a.Terminated)
			if !a.Terminated {
				actions = append(actions, env.Action{Env: a.Env, Agent: a.Agent, Action: []float32{1}})
			}
		}
		if err := e.SendActions(actions); err != nil {
			panic(err)
		}
	}
	_ = e.Stop()
	// Output:
	// env 0 obs [0] reward 0 terminated false
	// env 0 obs [1] reward 1 terminated false
	// env 0 obs [2] reward 1 terminated false
	// env 0 obs [3] reward 1 terminated true
	// externalenv: run loop returned
}
