package main

// #include "internal.h"
import "C"

import "unsafe"

// benchActC calls onnxrl_policy_act through C iters times (BenchmarkPolicyAct's C side) and
// returns the first status other than ONNXRL_OK, or 0.
func benchActC(h uintptr, obs []float32, n int, actions, logp, values []float32, iters int) int {
	ptr := func(s []float32) *C.float {
		if s == nil {
			return nil
		}
		return (*C.float)(unsafe.Pointer(unsafe.SliceData(s)))
	}
	return int(C.capi_bench_act(C.uintptr_t(h), ptr(obs), C.int64_t(n), 0, ptr(actions), ptr(logp), ptr(values), C.int64_t(iters)))
}
