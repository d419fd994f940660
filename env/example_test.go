package env_test

import (
	"fmt"
	"time"

	"github.com/onnxrl/sampler/env"
)

// A BaseEnv from an Env maker, driven like a sampler: Poll, act for every ready agent,
// TryReset the sub-environments whose episode ended, SendActions.
func ExampleNewBaseEnv() {
	b, err := env.NewBaseEnv(func(int) (env.Env, error) {
		return env.NewRandomEnv(env.RandomEnvConfig{EpisodeLen: 3, Reward: 1})
	}, env.BaseEnvOptions{NumEnvs: 2, Seed: env.WithSeed(42)})
	if err != nil {
		panic(err)
	}
	defer b.Stop()

	var batch, resets env.Batch // owned by the caller, reused every step
	var actions []env.Action
	act := []float32{1} // Discrete(2) action in the raw layout
	episodes, steps, ret := 0, 0, 0.0
	for episodes < 4 {
		batch.Clear()
		if err := b.Poll(&batch); err != nil {
			panic(err)
		}
		actions = actions[:0]
		for _, a := range batch.Agents { // a.Obs is valid until the next call on b
			ret += a.Reward
			if a.Terminated || a.Truncated {
				continue
			}
			actions = append(actions, env.Action{Env: a.Env, Agent: a.Agent, Action: act})
		}
		for _, st := range batch.Envs {
			if st.Reset {
				continue
			}
			steps++
			if st.Terminated || st.Truncated {
				episodes++
				resets.Clear()
				if _, err := b.TryReset(st.Env, env.Seed{}, &resets); err != nil {
					panic(err)
				}
				for _, a := range resets.Agents { // the new episode's first observation
					actions = append(actions, env.Action{Env: a.Env, Agent: a.Agent, Action: act})
				}
			}
		}
		if err := b.SendActions(actions); err != nil {
			panic(err)
		}
	}
	fmt.Println("episodes:", episodes, "steps:", steps, "return:", ret)
	// Output: episodes: 4 steps: 12 return: 12
}

// A RemoteVectorEnv steps each sub-environment on its own goroutine; Poll returns the ready
// ones (here with WaitAll: every sub-environment that was given work) and TryReset is
// asynchronous.
func ExampleNewRemoteVectorEnv() {
	r, err := env.NewRemoteVectorEnv(func(i int) (any, error) {
		return env.NewRandomEnv(env.RandomEnvConfig{EpisodeLen: 5, StepDelay: time.Duration(i) * time.Millisecond})
	}, env.RemoteVectorEnvOptions{BaseEnvOptions: env.BaseEnvOptions{NumEnvs: 3, Seed: env.WithSeed(1)}, BatchWait: env.WaitAll})
	if err != nil {
		panic(err)
	}
	defer r.Stop()

	var batch env.Batch
	var actions []env.Action
	steps, episodes := 0, 0
	for episodes < 6 {
		batch.Clear()
		if err := r.Poll(&batch); err != nil {
			panic(err)
		}
		actions = actions[:0]
		for _, a := range batch.Agents {
			if !a.Terminated && !a.Truncated {
				actions = append(actions, env.Action{Env: a.Env, Agent: a.Agent, Action: []float32{0}})
			}
		}
		for _, st := range batch.Envs {
			if !st.Reset {
				steps++
			}
			if st.Terminated || st.Truncated {
				episodes++
				if async, err := r.TryReset(st.Env, env.Seed{}, &batch); err != nil || !async {
					panic(err)
				}
			}
		}
		if err := r.SendActions(actions); err != nil {
			panic(err)
		}
	}
	fmt.Println("episodes:", episodes, "steps:", steps)
	// Output: episodes: 6 steps: 30
}
