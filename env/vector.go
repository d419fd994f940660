package env

import "github.com/onnxrl/sampler/spaces"

// VectorEnv is a batch of NumEnvs sub-environments with the same spaces, stepped together,
// with RLlib's VectorEnv semantics.
//
// There is no autoreset: when a sub-environment's episode ends (terminated or truncated), it
// keeps its final observation until ResetAt(i) starts a new episode, and the caller must reset
// it before the next Step, which otherwise fails with ErrNeedsReset for that index.
//
// Buffers are flat and owned by the caller: obs holds NumEnvs rows of
// ObservationSpace().Size() values, actions NumEnvs rows of ActionSpace().Size(), results
// NumEnvs entries.
type VectorEnv interface {
	NumEnvs() int
	ObservationSpace() spaces.Space
	ActionSpace() spaces.Space
	// ResetAt resets sub-environment i and writes its first observation into obs (one row).
	ResetAt(i int, seed Seed, obs []float32) (Info, error)
	// Step steps every sub-environment with its row of actions and writes each next
	// observation and result. A failing sub-environment makes Step return a *SubEnvError
	// naming its index.
	Step(actions, obs []float32, results []StepResult) error
	// SubEnvironments returns the sub-environments (RLlib's get_sub_environments).
	SubEnvironments() []any
}

// Restarter is implemented by a VectorEnv that can recreate one of its sub-environments
// (RLlib's VectorEnv.restart_at). The adapter from VectorEnv to BaseEnv uses it for
// BaseEnvOptions.RestartFailedSubEnvironments. The recreated sub-environment needs ResetAt
// before it steps.
type Restarter interface {
	RestartAt(i int) error
}
