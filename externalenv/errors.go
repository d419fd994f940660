package externalenv

import (
	"errors"
	"fmt"
)

// Errors of the simulator-side API. Validation errors wrap ErrBadObservation or ErrBadAction.
var (
	// ErrEpisodeExists: StartEpisode with the id of an episode that is still running.
	ErrEpisodeExists = errors.New("externalenv: episode already started")
	// ErrEpisodeDone: the episode has already completed (EndEpisode was called).
	ErrEpisodeDone = errors.New("externalenv: episode already completed")
	// ErrEpisodeNotFound: no episode with this id was started.
	ErrEpisodeNotFound = errors.New("externalenv: episode not found")
	// ErrEpisodeBusy: GetAction on an episode that already waits for an action.
	ErrEpisodeBusy = errors.New("externalenv: episode already waits for an action")
	// ErrTooManyEpisodes: StartEpisode beyond Options.MaxConcurrentEpisodes.
	ErrTooManyEpisodes = errors.New("externalenv: too many concurrent episodes")
	// ErrTooManyAgents: a multi-agent episode would have more than MaxAgents agents.
	ErrTooManyAgents = errors.New("externalenv: too many agents in the episode")
	// ErrTimeout: GetAction waited longer than Options.Timeout for the sampler.
	ErrTimeout = errors.New("externalenv: timed out waiting for an action")
	// ErrBadObservation is wrapped by the error for an observation outside the space.
	ErrBadObservation = errors.New("externalenv: observation not in the observation space")
	// ErrBadAction is wrapped by the error for an action outside the action space.
	ErrBadAction = errors.New("externalenv: action not in the action space")
	// ErrStopped is returned by every call after Stop (it is env.ErrStopped).
	ErrStopped = errStopped
)

// RunLoopError is returned by Poll once the simulator's run loop (Start) has returned or
// panicked: the sampler can no longer expect observations from it.
type RunLoopError struct {
	// Err is what run returned (nil when it returned nil), or the panic value as an error.
	Err      error
	Panicked bool
}

func (e *RunLoopError) Error() string {
	switch {
	case e.Panicked:
		return fmt.Sprintf("externalenv: run loop panicked: %v", e.Err)
	case e.Err != nil:
		return fmt.Sprintf("externalenv: run loop returned: %v", e.Err)
	}
	return "externalenv: run loop returned"
}

func (e *RunLoopError) Unwrap() error { return e.Err }
