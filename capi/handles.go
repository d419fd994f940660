package main

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// handleKind is the kind of value a handle names, in its low bits.
type handleKind uintptr

const (
	kindPolicy  handleKind = 1
	kindEnv     handleKind = 2
	kindVecEnv  handleKind = 3
	kindSampler handleKind = 4

	kindBits = 3
	kindMask = 1<<kindBits - 1
)

func (k handleKind) String() string {
	switch k {
	case kindPolicy:
		return "policy"
	case kindEnv:
		return "env"
	case kindVecEnv:
		return "vec_env"
	case kindSampler:
		return "sampler"
	}
	return "unknown"
}

// handles is the table of live handles. A handle is a number, n<<kindBits | kind, handed to C
// as an opaque pointer that is never dereferenced: a Go pointer may not be kept by C, and a
// number tells a released handle (n below the next one) from one that never was. Numbers
// are never reused.
type handles struct {
	next atomic.Uintptr // the last n handed out
	live sync.Map       // handle -> value
}

var table handles

// add registers v and returns its handle.
func (t *handles) add(kind handleKind, v any) uintptr {
	h := t.next.Add(1)<<kindBits | uintptr(kind)
	t.live.Store(h, v)
	return h
}

// get returns the value of handle h, which must be of kind.
func (t *handles) get(h uintptr, kind handleKind) (any, error) {
	if v, ok := t.live.Load(h); ok && handleKind(h&kindMask) == kind {
		return v, nil
	}
	return nil, t.why(h, kind)
}

// remove takes handle h out of the table and returns its value: later calls with h fail.
func (t *handles) remove(h uintptr, kind handleKind) (any, error) {
	if handleKind(h&kindMask) == kind {
		if v, ok := t.live.LoadAndDelete(h); ok {
			return v, nil
		}
	}
	return nil, t.why(h, kind)
}

// why explains why h is no live handle of kind.
func (t *handles) why(h uintptr, kind handleKind) error {
	got := handleKind(h & kindMask)
	switch {
	case h == 0:
		return fmt.Errorf("%w: the %s handle is NULL", errNull, kind)
	case got != kind && got >= kindPolicy && got <= kindSampler && h>>kindBits <= t.next.Load():
		return fmt.Errorf("%w: %#x is an onnxrl_%s, not an onnxrl_%s", errNoHandle, h, got, kind)
	case got == kind && h>>kindBits <= t.next.Load():
		return fmt.Errorf("%w (onnxrl_%s %#x)", errReleased, kind, h)
	}
	return fmt.Errorf("%w: %#x is no onnxrl_%s", errNoHandle, h, kind)
}
