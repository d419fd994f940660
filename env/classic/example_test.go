package classic_test

import (
	"fmt"

	"github.com/onnxrl/sampler/env"
	_ "github.com/onnxrl/sampler/env/classic" // registers the environments
	"github.com/onnxrl/sampler/spaces"
)

// Make an environment by name and run one episode with a simple controller that pushes the
// cart towards the side the pole leans to.
func Example() {
	made, err := env.Make("CartPole-v1", env.Config{"max_episode_steps": 200})
	if err != nil {
		fmt.Println(err)
		return
	}
	e := made.Env() // nil if it were another kind (made.Kind() says which)
	fmt.Println(spaces.String(e.ObservationSpace()), spaces.String(e.ActionSpace()))

	obs := make([]float32, e.ObservationSpace().Size()) // [x, x_dot, theta, theta_dot]
	action := make([]float32, e.ActionSpace().Size())
	if _, err := e.Reset(env.WithSeed(42), obs); err != nil {
		fmt.Println(err)
		return
	}
	total, steps := 0.0, 0
	for {
		action[0] = 0 // push left
		if obs[2]+0.5*obs[3] > 0 {
			action[0] = 1 // push right
		}
		res, err := e.Step(action, obs)
		if err != nil {
			fmt.Println(err)
			return
		}
		total += res.Reward
		steps++
		if res.Terminated || res.Truncated {
			fmt.Printf("steps=%d return=%.0f terminated=%v truncated=%v\n", steps, total, res.Terminated, res.Truncated)
			break
		}
	}
	_, err = e.Step(action, obs)
	fmt.Println(err)
	// Output:
	// Box([-4.8 -inf -0.41887903 -inf], [4.8 inf 0.41887903 inf], (4,), float32) Discrete(2)
	// steps=200 return=200 terminated=false truncated=true
	// env: episode has ended; call Reset before Step
}

// A multi-agent episode: every active agent acts until all are done. Agent entries of out
// stay valid until the next Step, so the controller reads the observations from them.
func Example_multiAgent() {
	made, err := env.Make("MultiAgentCartPole", env.Config{"num_agents": 2, "max_episode_steps": 50})
	if err != nil {
		fmt.Println(err)
		return
	}
	m := made.MultiAgent()
	var out env.MultiAgentStep
	if err := m.Reset(env.WithSeed(1), &out); err != nil {
		fmt.Println(err)
		return
	}
	left, right := []float32{0}, []float32{1}
	actions := make([]env.AgentAction, 0, 2)
	for step := 1; !out.AllTerminated && !out.AllTruncated; step++ {
		actions = actions[:0]
		for _, a := range out.Agents {
			if a.Terminated || a.Truncated {
				continue
			}
			act := left // agent_0 always pushes left; agent_1 balances its pole
			if a.ID == "agent_1" && a.Obs[2]+0.5*a.Obs[3] > 0 {
				act = right
			}
			actions = append(actions, env.AgentAction{ID: a.ID, Action: act})
		}
		if err := m.Step(actions, &out); err != nil {
			fmt.Println(err)
			return
		}
		for _, a := range out.Agents {
			if a.Terminated || a.Truncated {
				fmt.Printf("step %d: %s done (terminated=%v)\n", step, a.ID, a.Terminated)
			}
		}
	}
	fmt.Println("all terminated:", out.AllTerminated, "all truncated:", out.AllTruncated)
	// Output:
	// step 10: agent_0 done (terminated=true)
	// step 50: agent_1 done (terminated=false)
	// all terminated: false all truncated: true
}
