package main

import (
	"errors"
	"io/fs"

	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

// The status codes of include/onnxrl/sampler.h.
const (
	statusOK              = 0
	statusInvalidArgument = -1
	statusNotFound        = -2
	statusState           = -3
	statusModel           = -4
	statusLimit           = -5
	statusTimeout         = -6
	statusIO              = -7
	statusInternal        = -8
	statusDevice          = -9
)

// codedError is an error whose status the code that made it knew best.
type codedError struct {
	status int
	err    error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// withStatus returns err with its status, or nil.
func withStatus(status int, err error) error {
	if err == nil {
		return nil
	}
	return &codedError{status: status, err: err}
}

// openStatus is the status of a failure to open a policy's sessions: statusDevice when the
// device is not available here (no driver, GPU or provider library), else statusModel.
func openStatus(err error) int {
	if errors.Is(err, inference.ErrDeviceUnavailable) {
		return statusDevice
	}
	return statusModel
}

// Errors of the library itself.
var (
	errNull     = errors.New("onnxrl: NULL pointer")
	errReleased = errors.New("onnxrl: the handle was released")
	errNoHandle = errors.New("onnxrl: not a handle")
)

// statusOf returns the status for err: a codedError's own, else by what err wraps.
func statusOf(err error) int {
	var ce *codedError
	switch {
	case err == nil:
		return statusOK
	case errors.As(err, &ce):
		return ce.status
	case errors.Is(err, inference.ErrDeviceUnavailable):
		return statusDevice
	case errors.Is(err, errNull), errors.Is(err, errNoHandle),
		errors.Is(err, externalenv.ErrBadObservation), errors.Is(err, externalenv.ErrBadAction),
		errors.Is(err, externalenv.ErrBadReward):
		return statusInvalidArgument
	case errors.Is(err, externalenv.ErrEpisodeNotFound), errors.Is(err, models.ErrModelNotFound),
		errors.Is(err, fs.ErrNotExist), errors.Is(err, inference.ErrLibraryNotFound):
		return statusNotFound
	case errors.Is(err, errReleased), errors.Is(err, externalenv.ErrEpisodeDone),
		errors.Is(err, externalenv.ErrEpisodeExists), errors.Is(err, externalenv.ErrEpisodeBusy),
		errors.Is(err, externalenv.ErrStopped), errors.Is(err, inference.ErrClosed):
		return statusState
	case errors.Is(err, externalenv.ErrTooManyEpisodes):
		return statusLimit
	case errors.Is(err, externalenv.ErrTimeout):
		return statusTimeout
	}
	return statusInternal
}
