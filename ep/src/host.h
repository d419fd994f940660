// The host backend's loops over the element math of kernels.h.
#pragma once

#include <cstdint>

#include "plan.h"

namespace onnxrl_ep {

constexpr int kMaxRank = 8;

// out[M][N] = act(a[M][K] @ s.w + s.bias)
void HostDense(const Step& s, const float* a, int64_t M, float* out);
// Broadcasting binary op over out's dims; sa and sb are the inputs' element strides per out dim.
void HostBinary(int32_t op, const float* a, const float* b, float* out, const int64_t* dims, const int64_t* sa,
                const int64_t* sb, int rank);
void HostUnary(const Step& s, const float* in, float* out, int64_t n);
void HostSoftmax(bool log, const float* in, float* out, int64_t outer, int64_t len, int64_t inner);
// out[i...] = in[base + sum(i[d] * strides[d])] over out's dims.
void HostStridedCopy(const float* in, int64_t base, const int64_t* dims, const int64_t* strides, int rank, float* out);
// LSTM / GRU over T steps of B rows; h0/c0 may be null (zeros); y/yh/yc may be null.
void HostLstm(const Step& s, const float* x, int64_t T, int64_t B, const float* h0, const float* c0, float* y,
              float* yh, float* yc, float* scratch);
void HostGru(const Step& s, const float* x, int64_t T, int64_t B, const float* h0, float* y, float* yh,
             float* scratch);
// Scratch floats HostLstm/HostGru need for B rows.
int64_t RnnScratch(const Step& s, int64_t B);

}  // namespace onnxrl_ep
