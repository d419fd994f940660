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
