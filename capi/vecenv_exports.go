package main

/*
#include <stdint.h>
#include <stdlib.h>
#include "internal.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// The exported onnxrl_vec_env_* functions (include/onnxrl/sampler.h, "Vectorized built-in
// environments"), over vecEnv (vecenv.go). As in exports.go: C memory is read through Go
// slices during the call only, every function recovers a panic (catch) and sets the thread's
// message (finish).

// maxNameLen bounds an environment name.
const maxNameLen = 1024

//export onnxrl_vec_env_open
func onnxrl_vec_env_open(name, config *C.char, numEnvs C.int64_t, seed C.uint64_t, out *C.uintptr_t) (status C.int) {
	defer catch(&status)
	return finish(vecEnvOpen(name, config, numEnvs, seed, out))
}

func vecEnvOpen(name, config *C.char, numEnvs C.int64_t, seed C.uint64_t, out *C.uintptr_t) error {
	if out == nil {
		return fmt.Errorf("%w: out", errNull)
	}
	*out = 0
	n, err := cString(name, "name", maxNameLen)
	if err != nil {
		return err
	}
	var cfg []byte
	if config != nil {
		if cfg, err = cString(config, "config_json", maxPathLen); err != nil {
			return err
		}
	}
	v, err := openVecEnv(string(n), cfg, int64(numEnvs), uint64(seed))
	if err != nil {
		return err
	}
	*out = C.uintptr_t(table.add(kindVecEnv, v))
	return nil
}

func vecEnvOf(h C.uintptr_t) (*vecEnv, error) {
	x, err := table.get(uintptr(h), kindVecEnv)
	if err != nil {
		return nil, err
	}
	return x.(*vecEnv), nil
}

//export onnxrl_vec_env_sizes
func onnxrl_vec_env_sizes(h C.uintptr_t, numEnvs, obsSize, actSize *C.int64_t) (status C.int) {
	defer catch(&status)
	v, err := vecEnvOf(h)
	if err != nil {
		return finish(err)
	}
	if numEnvs == nil {
		return finish(fmt.Errorf("%w: num_envs", errNull))
	}
	*numEnvs = C.int64_t(len(v.envs))
	return finish(sizes(v.obsN, v.actN, obsSize, actSize))
}

// copyOut copies b with a NUL into buf (cap bytes) and sets *length to len(b); a buf too
// small is statusLimit (with *length set, so the caller can retry), a NULL buf with cap 0
// only asks for the length.
func copyOut(b []byte, buf *C.char, capacity C.size_t, length *C.size_t, what string) error {
	if length == nil {
		return fmt.Errorf("%w: len", errNull)
	}
	*length = C.size_t(len(b))
	if buf == nil && capacity == 0 {
		return nil
	}
	if buf == nil {
		return fmt.Errorf("%w: buf", errNull)
	}
	if int(capacity) < len(b)+1 {
		return withStatus(statusLimit, fmt.Errorf("onnxrl: cap %d: the %s needs %d bytes with its NUL", capacity, what, len(b)+1))
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), len(b)+1)
	copy(dst, b)
	dst[len(b)] = 0
	return nil
}

//export onnxrl_vec_env_space
func onnxrl_vec_env_space(h C.uintptr_t, which C.int, buf *C.char, capacity C.size_t, length *C.size_t) (status C.int) {
	defer catch(&status)
	v, err := vecEnvOf(h)
	if err != nil {
		return finish(err)
	}
	b, err := v.spaceJSON(int(which))
	if err != nil {
		return finish(err)
	}
	return finish(copyOut(b, buf, capacity, length, "space JSON"))
}

//export onnxrl_vec_env_reset
func onnxrl_vec_env_reset(h C.uintptr_t, seeds *C.uint64_t, nSeeds C.int64_t, obs *C.float, infosLen *C.size_t) (status C.int) {
	defer catch(&status)
	return finish(vecEnvReset(h, seeds, nSeeds, obs, infosLen))
}

func vecEnvReset(h C.uintptr_t, seeds *C.uint64_t, nSeeds C.int64_t, obs *C.float, infosLen *C.size_t) error {
	v, err := vecEnvOf(h)
	if err != nil {
		return err
	}
	n := len(v.envs)
	if nSeeds < 0 || (nSeeds > 0 && seeds == nil) {
		return withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: n_seeds = %d with seeds %p: want 0, or 1 or num_envs (%d) seeds", int64(nSeeds), seeds, n))
	}
	if nSeeds != 0 && nSeeds != 1 && int64(nSeeds) != int64(n) {
		return withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: n_seeds = %d: want 0, 1 or num_envs (%d)", int64(nSeeds), n))
	}
	o, err := floats(obs, n*v.obsN, "obs")
	if err != nil {
		return err
	}
	var s []uint64
	if nSeeds > 0 {
		s = unsafe.Slice((*uint64)(unsafe.Pointer(seeds)), int(nSeeds))
	}
	k, err := v.resetAll(s, o)
	if infosLen != nil {
		*infosLen = C.size_t(k)
	}
	return err
}

//export onnxrl_vec_env_step
func onnxrl_vec_env_step(h C.uintptr_t, actions, obs *C.float, rewards *C.double, terminated, truncated *C.uint8_t, infosLen *C.size_t) (status C.int) {
	defer catch(&status)
	return finish(vecEnvStep(h, actions, obs, rewards, terminated, truncated, infosLen))
}

func vecEnvStep(h C.uintptr_t, actions, obs *C.float, rewards *C.double, terminated, truncated *C.uint8_t, infosLen *C.size_t) error {
	v, err := vecEnvOf(h)
	if err != nil {
		return err
	}
	n := len(v.envs)
	a, err := floats(actions, n*v.actN, "actions")
	if err != nil {
		return err
	}
	o, err := floats(obs, n*v.obsN, "obs")
	if err != nil {
		return err
	}
	if rewards == nil || terminated == nil || truncated == nil {
		return fmt.Errorf("%w: rewards, terminated and truncated", errNull)
	}
	r := unsafe.Slice((*float64)(unsafe.Pointer(rewards)), n)
	term := unsafe.Slice((*uint8)(unsafe.Pointer(terminated)), n)
	trunc := unsafe.Slice((*uint8)(unsafe.Pointer(truncated)), n)
	k, err := v.step(a, o, r, term, trunc)
	if infosLen != nil {
		*infosLen = C.size_t(k)
	}
	return err
}

//export onnxrl_vec_env_infos
func onnxrl_vec_env_infos(h C.uintptr_t, buf *C.char, capacity C.size_t, length *C.size_t) (status C.int) {
	defer catch(&status)
	v, err := vecEnvOf(h)
	if err != nil {
		return finish(err)
	}
	return finish(v.withInfos(func(b []byte) error { return copyOut(b, buf, capacity, length, "infos JSON") }))
}

//export onnxrl_vec_env_close
func onnxrl_vec_env_close(h C.uintptr_t) (status C.int) {
	defer catch(&status)
	if h == 0 {
		return finish(nil)
	}
	x, err := table.remove(uintptr(h), kindVecEnv)
	if err != nil {
		return finish(err)
	}
	return finish(x.(*vecEnv).close())
}
