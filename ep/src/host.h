// The host backend's loops over the element math of kernels.h.
#pragma once

#include <cstdint>

#include "kernels.h"

namespace onnxrl_ep {

constexpr int kMaxRank = 8;

// out[M][N] = act(a[M][K] @ w[K][N] + bias[N]); bias may be null; act_a and act_b are the
// activation's parameters (ApplyAct's a and b).
void HostDense(const float* a, int64_t M, int64_t K, const float* w, int64_t N, const float* bias, int32_t act,
               float act_a, float act_b, float* out);
// Broadcasting binary op over out's dims; sa and sb are the inputs' element strides per out dim.
void HostBinary(int32_t op, const float* a, const float* b, float* out, const int64_t* dims, const int64_t* sa,
                const int64_t* sb, int rank);
// NormalizeRow: y = (x - mean) / sqrt(var + epsilon) * scale + bias over one row of len floats
// (bias may be null); sums in 16 float lanes, two passes.
void NormalizeRow(const float* x, int64_t len, float epsilon, const float* scale, const float* bias, float* y);
// out[i] = ApplyAct(act, in[i], a, b) over n values.
void HostUnary(int32_t act, float a, float b, const float* in, float* out, int64_t n);
void HostSoftmax(bool log, const float* in, float* out, int64_t outer, int64_t len, int64_t inner);
// out[i...] = in[base + sum(i[d] * strides[d])] over out's dims.
void HostStridedCopy(const float* in, int64_t base, const int64_t* dims, const int64_t* strides, int rank, float* out);
// RnnWeights views the weights of a forward LSTM (G = 4 gates) or GRU (G = 3), transposed so
// that a row of inputs accumulates into contiguous gate rows: wx [I][G*H], wh [H][G*H], bx and
// bh [G*H].
struct RnnWeights {
  int64_t I = 0, H = 0;
  const float* wx = nullptr;
  const float* wh = nullptr;
  const float* bx = nullptr;
  const float* bh = nullptr;
};
// LSTM / GRU over T steps of B rows; h0/c0 may be null (zeros); y/yh/yc may be null. lbr is
// GRU's linear_before_reset.
void HostLstm(const RnnWeights& w, const float* x, int64_t T, int64_t B, const float* h0, const float* c0, float* y,
              float* yh, float* yc, float* scratch);
void HostGru(const RnnWeights& w, bool lbr, const float* x, int64_t T, int64_t B, const float* h0, float* y,
             float* yh, float* scratch);
// Scratch floats HostLstm (gates = 4) or HostGru (gates = 3) need for B rows of H hidden units.
int64_t RnnScratch(int64_t gates, int64_t H, int64_t B);

}  // namespace onnxrl_ep
