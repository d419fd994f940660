package env

import (
	"errors"
	"fmt"
)

// ErrNeedsReset is returned by Step when the episode has ended and Reset was not called.
var ErrNeedsReset = errors.New("env: episode has ended; call Reset before Step")

// ErrStopped is returned by a BaseEnv after Stop.
var ErrStopped = errors.New("env: stopped")

// ActionError reports an action that is not in the action space.
type ActionError struct {
	Agent  AgentID // empty for single-agent environments
	Action []float32
	Space  string // spaces.String of the action space
}

func (e *ActionError) Error() string {
	if e.Agent != "" {
		return fmt.Sprintf("env: action %v of agent %q is not in the action space %s", e.Action, e.Agent, e.Space)
	}
	return fmt.Sprintf("env: action %v is not in the action space %s", e.Action, e.Space)
}

// SubEnvError reports the failure of one sub-environment of a BaseEnv.
type SubEnvError struct {
	Env EnvID
	Op  string // "reset" or "step"
	Err error
}

func (e *SubEnvError) Error() string {
	return fmt.Sprintf("env: sub-environment %d failed in %s: %v", e.Env, e.Op, e.Err)
}

func (e *SubEnvError) Unwrap() error { return e.Err }

// ErrBadActions is wrapped by the error SendActions returns when the actions do not match the
// agents that were polled: an action is missing, duplicated, or names a sub-environment or an
// agent that is not waiting for one. The message names the env id and the agent.
var ErrBadActions = errors.New("env: actions do not match the polled agents")

// PanicError is the error a sub-environment's panic is turned into: the BaseEnv adapters and
// NewVectorEnv recover from a panicking Reset or Step and report it as an error (wrapped in a
// *SubEnvError), so that a faulty environment never crashes the process.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the panicking goroutine's stack (runtime/debug.Stack)
}

func (e *PanicError) Error() string { return fmt.Sprintf("env: panic: %v", e.Value) }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}
