// The LSTM and GRU cells of the host backend (host.h), whole vectors at a time: the gate
// arithmetic of kernels.h (LstmCell, GruOut) through TanhOf and SigmoidOf on simd.h's vectors,
// compiled per instruction set like the matrix multiply, the scalar form for the last columns.
#include "host.h"
#include "simd.h"

namespace onnxrl_ep {

namespace {

using namespace simd;

// Lstm: gates [rows][4H] (i, o, f, c; pre-activation sums) and the cell state c_in [rows][H]
// give the new state c_out and h_out, and y_out (when not null) a second copy of h_out.
template <typename V>
ONNXRL_ALWAYS_INLINE void Lstm(const float* gates, int64_t rows, int64_t H, const float* c_in, float* c_out,
                               float* h_out, float* y_out) {
  constexpr int L = Lanes<V>;
  for (int64_t r = 0; r < rows; r++) {
    const float* g = gates + r * 4 * H;
    const float* ci = c_in + r * H;
    float* co = c_out + r * H;
    float* hr = h_out + r * H;
    float* yr = y_out == nullptr ? nullptr : y_out + r * H;
    int64_t j = 0;
    for (; j + L <= H; j += L) {
      V cn = Load<V>(ci + j);
      V h = LstmCellOf(Load<V>(g + j), Load<V>(g + H + j), Load<V>(g + 2 * H + j), Load<V>(g + 3 * H + j), &cn);
      Store<V>(co + j, cn);
      Store<V>(hr + j, h);
      if (yr != nullptr) Store<V>(yr + j, h);
    }
    for (; j < H; j++) {
      float c = ci[j];
      hr[j] = LstmCell(g[j], g[H + j], g[2 * H + j], g[3 * H + j], &c);
      co[j] = c;
      if (yr != nullptr) yr[j] = hr[j];
    }
  }
}

// Gru: gx and gh [rows][3H] (z, r, n; x @ Wx + bx and h @ Wh + bh), linear_before_reset.
template <typename V>
ONNXRL_ALWAYS_INLINE void Gru(const float* gx, const float* gh, int64_t rows, int64_t H, float* h) {
  constexpr int L = Lanes<V>;
  for (int64_t r = 0; r < rows; r++) {
    const float* ax = gx + r * 3 * H;
    const float* ah = gh + r * 3 * H;
    float* hr = h + r * H;
    int64_t j = 0;
    for (; j + L <= H; j += L) {
      V z = SigmoidOf(Load<V>(ax + j) + Load<V>(ah + j));
      V rr = SigmoidOf(Load<V>(ax + H + j) + Load<V>(ah + H + j));
      V n = TanhOf(Load<V>(ax + 2 * H + j) + rr * Load<V>(ah + 2 * H + j));
      V hp = Load<V>(hr + j);
      Store<V>(hr + j, (1.0f - z) * n + z * hp);
    }
    for (; j < H; j++) {
      float z = GruGate(ax[j] + ah[j]);
      float rr = GruGate(ax[H + j] + ah[H + j]);
      hr[j] = GruOut(z, ax[2 * H + j] + rr * ah[2 * H + j], hr[j]);
    }
  }
}

void LstmPortable(const float* g, int64_t rows, int64_t H, const float* ci, float* co, float* h, float* y) {
  Lstm<V4>(g, rows, H, ci, co, h, y);
}
void GruPortable(const float* gx, const float* gh, int64_t rows, int64_t H, float* h) {
  Gru<V4>(gx, gh, rows, H, h);
}
#if defined(ONNXRL_X86_ISAS)
ONNXRL_TARGET_AVX2 void LstmAvx2(const float* g, int64_t rows, int64_t H, const float* ci, float* co, float* h,
                                 float* y) {
  Lstm<V8>(g, rows, H, ci, co, h, y);
}
ONNXRL_TARGET_AVX2 void GruAvx2(const float* gx, const float* gh, int64_t rows, int64_t H, float* h) {
  Gru<V8>(gx, gh, rows, H, h);
}
ONNXRL_TARGET_AVX512 void LstmAvx512(const float* g, int64_t rows, int64_t H, const float* ci, float* co, float* h,
                                     float* y) {
  Lstm<V16>(g, rows, H, ci, co, h, y);
}
ONNXRL_TARGET_AVX512 void GruAvx512(const float* gx, const float* gh, int64_t rows, int64_t H, float* h) {
  Gru<V16>(gx, gh, rows, H, h);
}
#endif

}  // namespace

void LstmCells(const float* gates, int64_t rows, int64_t H, const float* c_in, float* c_out, float* h_out,
               float* y_out) {
  switch (ChosenIsa()) {
#if defined(ONNXRL_X86_ISAS)
    case IsaLevel::kAvx512:
      return LstmAvx512(gates, rows, H, c_in, c_out, h_out, y_out);
    case IsaLevel::kAvx2:
      return LstmAvx2(gates, rows, H, c_in, c_out, h_out, y_out);
#endif
    default:
      return LstmPortable(gates, rows, H, c_in, c_out, h_out, y_out);
  }
}

void GruCells(const float* gx, const float* gh, int64_t rows, int64_t H, float* h) {
  switch (ChosenIsa()) {
#if defined(ONNXRL_X86_ISAS)
    case IsaLevel::kAvx512:
      return GruAvx512(gx, gh, rows, H, h);
    case IsaLevel::kAvx2:
      return GruAvx2(gx, gh, rows, H, h);
#endif
    default:
      return GruPortable(gx, gh, rows, H, h);
  }
}

}  // namespace onnxrl_ep
