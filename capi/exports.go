package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include -Wall
#cgo LDFLAGS: -ldl -lpthread
#include <stdint.h>
#include <stdlib.h>
#include "internal.h"
*/
import "C"

import (
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"unsafe"

	"github.com/onnxrl/sampler/externalenv/server"
	"github.com/onnxrl/sampler/inference"
)

// The exported functions of include/onnxrl/sampler.h. Handles travel as uintptr (the ABI of
// a pointer) and are looked up in the handle table; pointers are C memory, read through Go
// slices over it during the call only. Each function recovers a panic into statusInternal
// (catch) and sets the thread's message (finish): a function's result is finish(err).

func init() {
	// ONNX Runtime installed beside the library is found (see the header).
	if p := C.GoString(C.capi_self_path()); p != "" {
		if p, err := filepath.EvalSymlinks(p); err == nil {
			inference.AlsoLookIn(filepath.Dir(p))
		}
	}
}

// finish sets the calling thread's message for err ("" for nil) and returns err's status.
func finish(err error) C.int {
	if err == nil {
		C.capi_clear_error()
		return C.int(statusOK)
	}
	msg := err.Error()
	C.capi_set_error((*C.char)(unsafe.Pointer(unsafe.StringData(msg))), C.size_t(len(msg)))
	return C.int(statusOf(err))
}

// catch turns a panic of the calling function into statusInternal with the panic's message.
func catch(status *C.int) {
	if r := recover(); r != nil {
		*status = finish(withStatus(statusInternal, fmt.Errorf("onnxrl: internal error (please report it): %v", r)))
	}
}

// cString reads the NUL-terminated string at p, of at most limit bytes, without copying:
// the bytes stay valid during the call only.
func cString(p *C.char, what string, limit int) ([]byte, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: %s", errNull, what)
	}
	for n := 0; n <= limit; n++ {
		if *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) == 0 {
			return unsafe.Slice((*byte)(unsafe.Pointer(p)), n), nil
		}
	}
	return nil, withStatus(statusLimit, fmt.Errorf("onnxrl: %s is longer than %d bytes", what, limit))
}

// floats returns the n values at p as a slice (nil for n == 0), or an error for NULL.
func floats(p *C.float, n int, what string) ([]float32, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: %s", errNull, what)
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(p)), n), nil
}

// rows checks a row count against the row size.
func rows(n C.int64_t, size int) (int, error) {
	if n < 0 || (size > 0 && int64(n) > math.MaxInt32/int64(size)) {
		return 0, withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: n = %d: want 0..%d", int64(n), math.MaxInt32/max(size, 1)))
	}
	return int(n), nil
}

const maxPathLen = 1 << 16

//export onnxrl_policy_open
func onnxrl_policy_open(model, options *C.char, out *C.uintptr_t) (status C.int) {
	defer catch(&status)
	return finish(openHandle(kindPolicy, model, options, out, func(m string, o []byte) (any, error) { return openPolicy(m, o) }))
}

// openHandle reads open's arguments from C, opens the value and registers it as a handle of
// kind in *out (0 on failure).
func openHandle(kind handleKind, model, options *C.char, out *C.uintptr_t, open func(model string, options []byte) (any, error)) error {
	if out == nil {
		return fmt.Errorf("%w: out", errNull)
	}
	*out = 0
	m, err := cString(model, "model", maxPathLen)
	if err != nil {
		return err
	}
	var o []byte
	if options != nil {
		if o, err = cString(options, "options_json", maxPathLen); err != nil {
			return err
		}
	}
	v, err := open(string(m), o)
	if err != nil {
		return err
	}
	*out = C.uintptr_t(table.add(kind, v))
	return nil
}

//export onnxrl_policy_sizes
func onnxrl_policy_sizes(h C.uintptr_t, obsSize, actSize *C.int64_t) (status C.int) {
	defer catch(&status)
	v, err := table.get(uintptr(h), kindPolicy)
	if err != nil {
		return finish(err)
	}
	p := v.(*policy)
	return finish(sizes(p.obsSize, p.actSize, obsSize, actSize))
}

func sizes(obs, act int, obsOut, actOut *C.int64_t) error {
	if obsOut == nil || actOut == nil {
		return fmt.Errorf("%w: obs_size and action_size", errNull)
	}
	*obsOut, *actOut = C.int64_t(obs), C.int64_t(act)
	return nil
}

//export onnxrl_policy_act
func onnxrl_policy_act(h C.uintptr_t, obs *C.float, n C.int64_t, explore C.int, actions, logp, values *C.float) (status C.int) {
	defer catch(&status)
	return finish(policyAct(h, obs, n, explore, actions, logp, values))
}

func policyAct(h C.uintptr_t, obs *C.float, n C.int64_t, explore C.int, actions, logp, values *C.float) error {
	v, err := table.get(uintptr(h), kindPolicy)
	if err != nil {
		return err
	}
	p := v.(*policy)
	rowsN, err := rows(n, max(p.obsSize, p.actSize))
	if err != nil {
		return err
	}
	o, err := floats(obs, rowsN*p.obsSize, "obs")
	if err != nil {
		return err
	}
	var out server.ActOutputs
	if out.Actions, err = floats(actions, rowsN*p.actSize, "actions"); err != nil {
		return err
	}
	if logp != nil {
		out.LogP, _ = floats(logp, rowsN, "logp")
	}
	if values != nil {
		out.Values, _ = floats(values, rowsN, "values")
	}
	if rowsN == 0 {
		return nil
	}
	return p.act(o, rowsN, explore != 0, out)
}

//export onnxrl_policy_close
func onnxrl_policy_close(h C.uintptr_t) (status C.int) {
	defer catch(&status)
	if h == 0 {
		return finish(nil)
	}
	v, err := table.remove(uintptr(h), kindPolicy)
	if err != nil {
		return finish(err)
	}
	return finish(withStatus(statusInternal, v.(*policy).close()))
}

//export onnxrl_env_open
func onnxrl_env_open(model, options *C.char, out *C.uintptr_t) (status C.int) {
	defer catch(&status)
	return finish(openHandle(kindEnv, model, options, out, func(m string, o []byte) (any, error) { return openEnv(m, o) }))
}

//export onnxrl_env_sizes
func onnxrl_env_sizes(h C.uintptr_t, obsSize, actSize *C.int64_t) (status C.int) {
	defer catch(&status)
	v, err := table.get(uintptr(h), kindEnv)
	if err != nil {
		return finish(err)
	}
	e := v.(*cenv)
	return finish(sizes(e.obsSize, e.actSize, obsSize, actSize))
}

//export onnxrl_episode_start
func onnxrl_episode_start(h C.uintptr_t, id *C.char, training C.int, idOut *C.char, idCap C.size_t) (status C.int) {
	defer catch(&status)
	return finish(episodeStart(h, id, training, idOut, idCap))
}

// uuidLen is the length of a generated episode id.
const uuidLen = 36

func episodeStart(h C.uintptr_t, id *C.char, training C.int, idOut *C.char, idCap C.size_t) error {
	v, err := table.get(uintptr(h), kindEnv)
	if err != nil {
		return err
	}
	e := v.(*cenv)
	var want []byte
	need := uuidLen + 1
	if id != nil {
		if want, err = cString(id, "episode_id", maxIDLen); err != nil {
			return err
		}
		need = len(want) + 1
	} else if idOut == nil {
		return fmt.Errorf("%w: id_out (needed when episode_id is NULL)", errNull)
	}
	if idOut != nil && int(idCap) < need {
		return withStatus(statusLimit, fmt.Errorf("onnxrl: id_cap %d: the id needs %d bytes with its NUL", idCap, need))
	}
	got, err := e.start(want, training != 0)
	if err != nil {
		return err
	}
	if idOut != nil {
		dst := unsafe.Slice((*byte)(unsafe.Pointer(idOut)), len(got)+1)
		copy(dst, got)
		dst[len(got)] = 0
	}
	return nil
}

// episodeArgs looks up the env and reads the episode id and the observation.
func episodeArgs(h C.uintptr_t, id *C.char, obs *C.float) (*cenv, []byte, []float32, error) {
	v, err := table.get(uintptr(h), kindEnv)
	if err != nil {
		return nil, nil, nil, err
	}
	e := v.(*cenv)
	want, err := cString(id, "episode_id", maxIDLen)
	if err != nil {
		return nil, nil, nil, err
	}
	o, err := floats(obs, e.obsSize, "obs")
	return e, want, o, err
}

// episodeActionArgs is episodeArgs with the action buffer.
func episodeActionArgs(h C.uintptr_t, id *C.char, obs, action *C.float) (*cenv, []byte, []float32, []float32, error) {
	e, want, o, err := episodeArgs(h, id, obs)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	a, err := floats(action, e.actSize, "action")
	return e, want, o, a, err
}

//export onnxrl_episode_get_action
func onnxrl_episode_get_action(h C.uintptr_t, id *C.char, obs, action *C.float) (status C.int) {
	defer catch(&status)
	e, want, o, a, err := episodeActionArgs(h, id, obs, action)
	if err != nil {
		return finish(err)
	}
	return finish(e.getAction(want, o, a))
}

//export onnxrl_episode_get_actions
func onnxrl_episode_get_actions(h C.uintptr_t, ids **C.char, n C.int64_t, obs, actions *C.float) (status C.int) {
	defer catch(&status)
	return finish(episodeGetActions(h, ids, n, obs, actions))
}

// idList holds the ids of a call on many episodes.
type idList struct{ ids [][]byte }

var idListPool = sync.Pool{New: func() any { return &idList{} }}

// withIDs reads the n episode ids at ids (valid during the call only) and calls f with them.
func withIDs(ids **C.char, n int, f func(ids [][]byte) error) error {
	l := idListPool.Get().(*idList)
	defer func() {
		clear(l.ids)
		idListPool.Put(l)
	}()
	l.ids = l.ids[:0]
	for i, p := range unsafe.Slice(ids, n) {
		b, err := cString(p, "the episode id", maxIDLen)
		if err != nil {
			return fmt.Errorf("episode_ids[%d]: %w", i, err)
		}
		l.ids = append(l.ids, b)
	}
	return f(l.ids)
}

func episodeGetActions(h C.uintptr_t, ids **C.char, n C.int64_t, obs, actions *C.float) error {
	v, err := table.get(uintptr(h), kindEnv)
	if err != nil {
		return err
	}
	e := v.(*cenv)
	rowsN, err := rows(n, max(e.obsSize, e.actSize))
	if err != nil {
		return err
	}
	if rowsN > 0 && ids == nil {
		return fmt.Errorf("%w: episode_ids", errNull)
	}
	o, err := floats(obs, rowsN*e.obsSize, "obs")
	if err != nil {
		return err
	}
	a, err := floats(actions, rowsN*e.actSize, "actions")
	if err != nil {
		return err
	}
	if rowsN == 0 {
		return nil
	}
	return withIDs(ids, rowsN, func(ids [][]byte) error { return e.getActions(ids, o, a) })
}

//export onnxrl_episode_log_action
func onnxrl_episode_log_action(h C.uintptr_t, id *C.char, obs, action *C.float) (status C.int) {
	defer catch(&status)
	e, want, o, a, err := episodeActionArgs(h, id, obs, action)
	if err != nil {
		return finish(err)
	}
	return finish(e.logAction(want, o, a))
}

//export onnxrl_episode_log_returns
func onnxrl_episode_log_returns(h C.uintptr_t, id *C.char, reward C.double) (status C.int) {
	defer catch(&status)
	v, err := table.get(uintptr(h), kindEnv)
	if err != nil {
		return finish(err)
	}
	want, err := cString(id, "episode_id", maxIDLen)
	if err != nil {
		return finish(err)
	}
	return finish(v.(*cenv).logReturns(want, float64(reward)))
}

//export onnxrl_episode_log_returns_batch
func onnxrl_episode_log_returns_batch(h C.uintptr_t, ids **C.char, n C.int64_t, rewards *C.double) (status C.int) {
	defer catch(&status)
	return finish(episodeLogReturnsBatch(h, ids, n, rewards))
}

func episodeLogReturnsBatch(h C.uintptr_t, ids **C.char, n C.int64_t, rewards *C.double) error {
	v, err := table.get(uintptr(h), kindEnv)
	if err != nil {
		return err
	}
	e := v.(*cenv)
	rowsN, err := rows(n, 1)
	if err != nil {
		return err
	}
	if rowsN == 0 {
		return nil
	}
	if ids == nil {
		return fmt.Errorf("%w: episode_ids", errNull)
	}
	if rewards == nil {
		return fmt.Errorf("%w: rewards", errNull)
	}
	r := unsafe.Slice((*float64)(unsafe.Pointer(rewards)), rowsN)
	return withIDs(ids, rowsN, func(ids [][]byte) error { return e.logReturnsBatch(ids, r) })
}

//export onnxrl_episode_end
func onnxrl_episode_end(h C.uintptr_t, id *C.char, obs *C.float) (status C.int) {
	defer catch(&status)
	e, want, o, err := episodeArgs(h, id, obs)
	if err != nil {
		return finish(err)
	}
	return finish(e.end(want, o, false))
}

//export onnxrl_episode_end_truncated
func onnxrl_episode_end_truncated(h C.uintptr_t, id *C.char, obs *C.float) (status C.int) {
	defer catch(&status)
	e, want, o, err := episodeArgs(h, id, obs)
	if err != nil {
		return finish(err)
	}
	return finish(e.end(want, o, true))
}

//export onnxrl_env_close
func onnxrl_env_close(h C.uintptr_t) (status C.int) {
	defer catch(&status)
	if h == 0 {
		return finish(nil)
	}
	v, err := table.remove(uintptr(h), kindEnv)
	if err != nil {
		return finish(err)
	}
	return finish(v.(*cenv).close())
}
