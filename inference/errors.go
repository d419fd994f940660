package inference

import (
	"errors"
	"fmt"
	"strings"
)

// ErrClosed is returned by a Session after Close.
var ErrClosed = errors.New("inference: session is closed")

// ShapeMismatchError reports data whose shape does not fit an input.
type ShapeMismatchError struct {
	Input string
	Want  string // the expected shape, with symbolic dimensions, like [batch,4]
	Got   []int64
}

func (e *ShapeMismatchError) Error() string {
	return fmt.Sprintf("inference: input %q: shape %v does not match the expected %s", e.Input, formatShape(e.Got), e.Want)
}

// TypeError reports a value of the wrong element type for an input or output.
type TypeError struct {
	Name   string
	Want   ElemType
	Got    ElemType // ElemUndefined when not applicable
	Detail string
}

func (e *TypeError) Error() string {
	switch {
	case e.Detail != "":
		return fmt.Sprintf("inference: %q (%s): %s", e.Name, e.Want, e.Detail)
	default:
		return fmt.Sprintf("inference: %q expects %s data, got %s", e.Name, e.Want, e.Got)
	}
}

// UnknownNameError reports an input or output name the model does not have.
type UnknownNameError struct {
	Kind  string // "input" or "output"
	Name  string
	Known []string
}

func (e *UnknownNameError) Error() string {
	return fmt.Sprintf("inference: the model has no %s %q (its %ss: %s)", e.Kind, e.Name, e.Kind, strings.Join(e.Known, ", "))
}

// BatchError reports a batch size outside 1..capacity.
type BatchError struct {
	Batch, Capacity int
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("inference: batch size %d is outside 1..%d (the session's capacity)", e.Batch, e.Capacity)
}

// ProviderError reports an execution provider the loaded runtime cannot use.
type ProviderError struct {
	Provider string
	Library  string
	Version  string
	Err      error
}

func (e *ProviderError) Error() string {
	return fmt.Sprintf("inference: execution provider %s is not available in the ONNX Runtime library %s (version %s): %v. "+
		"The library installed by `make onnxruntime` is the CPU build; for GPUs install an ONNX Runtime GPU build "+
		"(onnxruntime-gpu %s or newer for Linux, with its CUDA and cuDNN libraries; TensorRT for tensorrt) and set %s to its libonnxruntime.so",
		e.Provider, e.Library, e.Version, e.Err, PinnedVersion, LibraryEnv)
}

func (e *ProviderError) Unwrap() error { return e.Err }

func formatShape(s []int64) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ",") + "]"
}
