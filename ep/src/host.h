// The host backend's loops over the element math of kernels.h.
#pragma once

#include <cstdint>

#include "gemm.h"
#include "kernels.h"

namespace onnxrl_ep {

constexpr int kMaxRank = 8;

// out[M][N] = act(a[M][K] @ w[K][N] + bias[N]); bias may be null; act_a and act_b are the
// activation's parameters (ApplyAct's a and b). w is packed on each call (gemm.h): the tests'
// reference; kernels pack their weights once.
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
// bh [G*H]; and, where the kernel has prepared them (RnnKernel::PrepareHost), their packed
// forms: an LSTM's x = [Wx; Wh] stacked ([I+H][4H], one multiply per step over the row [x_t,
// h]) with bias bx + bh; a GRU's x = Wx with bias bx and h = Wh with bias bh (without
// linear_before_reset: its z and r columns only, and hn its candidate's). Without packed forms
// the loops pack the raw weights on every call.
struct RnnWeights {
  int64_t I = 0, H = 0;
  const float* wx = nullptr;
  const float* wh = nullptr;
  const float* bx = nullptr;
  const float* bh = nullptr;
  const PackedWeights* x = nullptr;
  const PackedWeights* h = nullptr;
  const PackedWeights* hn = nullptr;
};
// For an LSTM, h is the gate multiply's one-level Strassen form (LstmStrassen) where
// LstmStrassenFits, else empty.
//
// RnnPack packs w's raw weights as RnnWeights' packed forms describe (lstm: 4 gates, else a GRU
// with linear_before_reset lbr); hn is left empty unless a GRU without it.
void RnnPack(const RnnWeights& w, bool lstm, bool lbr, PackedWeights* x, PackedWeights* h, PackedWeights* hn);
// LSTM / GRU over T steps of rows [b0, b1) of B; h0/c0 may be null (zeros); y/yh/yc may be
// null. lbr is GRU's linear_before_reset. Every pointer is to the whole batch's tensor or
// scratch; distinct row ranges may run at the same time.
void HostLstm(const RnnWeights& w, const float* x, int64_t T, int64_t B, const float* h0, const float* c0, float* y,
              float* yh, float* yc, float* scratch, int64_t b0 = 0, int64_t b1 = -1);
void HostGru(const RnnWeights& w, bool lbr, const float* x, int64_t T, int64_t B, const float* h0, float* y,
             float* yh, float* scratch, int64_t b0 = 0, int64_t b1 = -1);
// Scratch floats HostLstm (gates = 4) or HostGru (gates = 3) need for B rows of I inputs and H
// hidden units.
int64_t RnnScratch(int64_t gates, int64_t I, int64_t H, int64_t B);
// LstmStrassen runs one LSTM step on the first rows of n, a multiple of 16 (it returns how
// many: n rounded down to one), with the gate multiply [x, h] @ [Wx; Wh] as one level of
// Strassen's algorithm (7/8 of the multiply-adds) and the cells fused into it
// (lstm_strassen.cc): x [n][I], h and c [n][H] the state read, c_out, h_out and y_out (may be
// null) [n][H] the state written (h_out may be h and c_out c). s is PackLstmStrassen's form;
// scratch holds 16 * LstmStrassenRowScratch(I, H) floats.
int64_t LstmStrassen(const PackedWeights& s, int64_t I, int64_t H, const float* x, const float* h, const float* c,
                     int64_t n, float* scratch, float* c_out, float* h_out, float* y_out);
// LstmStrassenFits: the shapes LstmStrassen takes (H a multiple of 16, I + H even) on the
// instruction set it is written for (AVX-512).
bool LstmStrassenFits(int64_t I, int64_t H);
// PackLstmStrassen packs an LSTM's weights and biases for LstmStrassen.
void PackLstmStrassen(const RnnWeights& w, PackedWeights* s);
// LstmStrassenRowScratch: LstmStrassen's scratch per row of 16.
int64_t LstmStrassenRowScratch(int64_t I, int64_t H);
// LstmCells: gates [rows][4H] (i, o, f, c sums) and the cell state c_in [rows][H] give the new
// c_out and h_out [rows][H] (c_out may be c_in), and y_out (when not null) a copy of h_out
// (cells.cc).
void LstmCells(const float* gates, int64_t rows, int64_t H, const float* c_in, float* c_out, float* h_out,
               float* y_out);
// GruCells: gx, gh [rows][3H] (z, r, n of x @ Wx + bx and h @ Wh + bh) update h [rows][H], the
// linear_before_reset form (cells.cc).
void GruCells(const float* gx, const float* gh, int64_t rows, int64_t H, float* h);

}  // namespace onnxrl_ep
