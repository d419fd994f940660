// Declarations shared by errors.c and the cgo preamble of exports.go. Not installed: the
// linker version script keeps these symbols local to the library.
#ifndef ONNXRL_CAPI_INTERNAL_H
#define ONNXRL_CAPI_INTERNAL_H

#include <stddef.h>

void capi_set_error(const char *msg, size_t n);
void capi_clear_error(void);
const char *capi_self_path(void);

#include <stdint.h>
// BenchmarkPolicyAct's loop (benchloop.c).
int capi_bench_act(uintptr_t policy, const float *obs, int64_t n, int explore, float *actions,
                   float *logp, float *values, int64_t iters);

#endif
