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

// A simulator with two agents: "blue" plays two steps, "red" is done after the first and
// reports its final observation with the second call; a stand-in sampler answers 1 for
// every agent that acts.
func ExampleExternalMultiAgentEnv() {
	e, err := externalenv.NewMultiAgent(externalenv.MultiAgentOptions{
		ObservationSpace: spaces.NewBox(-10, 10, 1), ActionSpace: &spaces.Discrete{N: 2},
	})
	if err != nil {
		panic(err)
	}
	e.Start(context.Background(), func(ctx context.Context, e *externalenv.ExternalMultiAgentEnv) error {
		id, err := e.StartEpisode("demo", true)
		if err != nil {
			return err
		}
		obs := map[string][]float32{"blue": {0}, "red": {5}}
		for step := range 2 {
			acts, err := e.GetAction(ctx, id, obs)
			if err != nil {
				return err
			}
			for agent, a := range acts { // valid until the episode's next GetAction
				obs[agent] = []float32{obs[agent][0] + a[0]}
			}
			dones := map[string]bool{"red": step == 0}
			if err := e.LogReturns(id, map[string]float64{"blue": 1, "red": -1}, dones, nil); err != nil {
				return err
			}
			if step == 1 {
				delete(obs, "red") // red ended with the second call
			}
		}
		return e.EndEpisodeTruncated(id, obs)
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
			fmt.Printf("%s obs %v reward %v terminated %v truncated %v\n", a.Agent, a.Obs, a.Reward, a.Terminated, a.Truncated)
			if !a.Terminated && !a.Truncated {
				actions = append(actions, env.Action{Env: a.Env, Agent: a.Agent, Action: []float32{1}})
			}
		}
		if err := e.SendActions(actions); err != nil {
			panic(err)
		}
	}
	_ = e.Stop()
	// Output:
	// blue obs [0] reward 0 terminated false truncated false
	// red obs [5] reward 0 terminated false truncated false
	// blue obs [1] reward 1 terminated false truncated false
	// red obs [6] reward -1 terminated true truncated false
	// blue obs [2] reward 1 terminated false truncated true
	// externalenv: run loop returned
}
