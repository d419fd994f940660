// The C side of BenchmarkPolicyAct: calls onnxrl_policy_act through C, as a host does, iters
// times. Dead code in the library (the version script keeps it local); it lives here because
// Go test files cannot hold C.
#include <stdint.h>

#include "onnxrl/sampler.h"
#include "internal.h"

int capi_bench_act(uintptr_t policy, const float *obs, int64_t n, int explore, float *actions,
                   float *logp, float *values, int64_t iters) {
    for (int64_t i = 0; i < iters; i++) {
        int status = onnxrl_policy_act((onnxrl_policy *)policy, obs, n, explore, actions, logp, values);
        if (status != ONNXRL_OK) return status;
    }
    return ONNXRL_OK;
}
