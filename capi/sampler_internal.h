// The C layout of onnxrl_column (include/onnxrl/sampler.h), for the cgo preambles of
// sampler.go and sampler_exports.go (which cannot include the public header: its prototypes
// would clash with cgo's own). Not installed.
#ifndef ONNXRL_CAPI_SAMPLER_INTERNAL_H
#define ONNXRL_CAPI_SAMPLER_INTERNAL_H

#include <stdint.h>

typedef struct capi_column {
    const char *name;
    const void *data;
    int32_t dtype;
    int32_t ndim;
    int64_t shape[2];
} capi_column;

#endif
