package server

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/server/wire"
)

// PanicError is a panic recovered in a request handler or in the Sampler's goroutine: the
// value and the stack where it happened. The server logs it and answers 500; the process
// lives on.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("server: panic: %v", e.Value) }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// recovered turns a panic value into a *PanicError (nil for no panic).
func recovered(v any) *PanicError {
	if v == nil {
		return nil
	}
	return &PanicError{Value: v, Stack: debug.Stack()}
}

// recoverRequest answers a request whose handler panicked: it logs the panic with its stack,
// ends the request's episode (truncated, as Close would, so that what it recorded is kept)
// and answers 500. http.ErrAbortHandler is net/http's own way to abort and passes through.
func (s *Server) recoverRequest(w http.ResponseWriter, v any, ep endpoint, id string) int {
	if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
		panic(v)
	}
	pe := recovered(v)
	s.metrics.panics.Add(1)
	s.log.Error("server: panic in a request", "endpoint", endpointNames[ep], "episode", id, "panic", pe.Value, "stack", string(pe.Stack))
	if id != "" {
		switch err := s.eps.TruncateEpisode(id); {
		case err == nil:
			s.metrics.truncated.Add(1)
			s.metrics.active.Store(int64(s.eps.Running()))
		case !errors.Is(err, externalenv.ErrEpisodeDone) && !errors.Is(err, externalenv.ErrEpisodeNotFound):
			s.log.Error("server: ending the episode of a failed request", "episode", id, "err", err)
		}
	}
	return writeError(w, http.StatusInternalServerError, wire.CodeInternal, "internal error: the request failed and its episode was ended (the server's log has the details)")
}

// Fail puts the server in a failed state, for when the sampler has stopped with err (a
// panic, a failed write): /healthz answers 503 with the reason, the episode endpoints answer
// 503 (500 for the requests that waited on the failed sampler), /v1/act goes on. The
// server stays up until it is shut down. The first reason is kept.
func (s *Server) Fail(err error) {
	if err == nil {
		err = errors.New("the sampler stopped")
	}
	s.failure.CompareAndSwap(nil, &err)
}

// Failure returns the reason given to Fail, or nil.
func (s *Server) Failure() error {
	if p := s.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// errFailed is the error of episode requests on a failed server (503).
type errFailed struct{ reason error }

func (e *errFailed) Error() string {
	return "the server cannot serve episodes: " + publicMessage(e.reason)
}
