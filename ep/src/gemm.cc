// Packed weights and the register-tiled micro-kernels of the host backend's matrix multiply.
//
// A tile is MR rows by NV panels of 16 columns: MR * NV * 16 sums held in vector registers across
// the whole K loop (one broadcast of x and NV loads of w per k, MR * NV fused multiply-adds),
// started from the bias and passed through the activation before the only store. The code is
// written once over GCC's vector extension and compiled three times with different
// target attributes, each with its own vector width; MR and NV fit each one's register file:
// AVX-512 8 x 2 (16 of 32 zmm), AVX2 6 x 1 (12 of 16 ymm, two per panel row), portable 3 x 1
// (12 of 16 SSE2 or NEON registers, four per panel row).
// Measured with benchmarks/epbench (ep/README.md).
//
// The vectors never cross a call boundary (every helper is always_inline, TanhOf and SigmoidOf
// of kernels.h inline): the ABI note GCC gives for passing them by value does not apply, and
// ep/CMakeLists.txt compiles this file with -Wno-psabi.
#include "gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

#include "kernels.h"
#include "simd.h"

namespace onnxrl_ep {

void PackedWeights::Free::operator()(float* p) const { std::free(p); }

PackedWeights PackedWeights::Pack(const float* w, int64_t K, int64_t N, int64_t ldw, const float* bias) {
  PackedWeights pw;
  pw.Repack(w, K, N, ldw, bias);
  return pw;
}

void PackedWeights::Repack(const float* w, int64_t K, int64_t N, int64_t ldw, const float* bias) {
  this->K = K;
  this->N = N;
  panels = (N + kPanel - 1) / kPanel;
  size_t floats = static_cast<size_t>(std::max<int64_t>(panels * K * kPanel, 1));
  if (floats > capacity) {
    size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
    float* p = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (p == nullptr) throw std::bad_alloc();
    data.reset(p);
    capacity = bytes / sizeof(float);
  }
  float* p = data.get();
  for (int64_t pn = 0; pn < panels; pn++) {
    int64_t cols = std::min(kPanel, N - pn * kPanel);
    float* dst = p + pn * K * kPanel;
    for (int64_t k = 0; k < K; k++) {
      std::memcpy(dst + k * kPanel, w + k * ldw + pn * kPanel, cols * sizeof(float));
      std::memset(dst + k * kPanel + cols, 0, (kPanel - cols) * sizeof(float));
    }
  }
  bias_.assign(panels * kPanel, 0.0f);
  if (bias != nullptr) std::memcpy(bias_.data(), bias, N * sizeof(float));
}

namespace {

using namespace simd;

#define ONNXRL_INLINE_LAMBDA __attribute__((always_inline))

// Src is the left matrix of a multiply: rows of K floats, the first K1 of row m at x + m *
// lda and the rest at x2 + m * lda2 (an LSTM step's [x_t, h] without building it; K1 = K and
// x2 unused for one matrix).
struct Src {
  const float* x;
  int64_t lda;
  int64_t K1;
  const float* x2;
  int64_t lda2;
  Src At(int64_t m) const { return {x + m * lda, lda, K1, x2 == nullptr ? nullptr : x2 + m * lda2, lda2}; }
};

// Tile computes MR rows by NV panels with vectors V (C = kPanel / lanes of them per panel
// row): x points at the tile's first row, w at its first panel (panels pstride floats apart),
// bias at the panel's padded bias; ncols of the NV * 16 columns are stored (the rest are the
// last panel's padding).
template <typename V, int A, int MR, int NV, int NC = NV * (kPanel / Lanes<V>)>
ONNXRL_ALWAYS_INLINE void Tile(const Src& x, int64_t K, const float* w, int64_t pstride, const float* bias,
                               const Epilogue& e, float* out, int64_t ldo, int64_t ncols) {
  constexpr int L = Lanes<V>, C = kPanel / L;
  V acc[MR * NC];
#pragma GCC unroll 8
  for (int c = 0; c < NC; c++) {
    V b = Load<V>(bias + c * L);
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++) acc[r * NC + c] = b;
  }
  // Rows of a lda floats apart times the panels' rows from k0, K of them.
  auto part = [&](const float* a, int64_t lda, int64_t k0, int64_t K) ONNXRL_INLINE_LAMBDA {
    const float* wk = w + k0 * kPanel;
    for (int64_t k = 0; k < K; k++) {
      V wv[NC];
#pragma GCC unroll 8
      for (int c = 0; c < NC; c++) wv[c] = Load<V>(wk + (c / C) * pstride + k * kPanel + (c % C) * L);
#pragma GCC unroll 8
      for (int r = 0; r < MR; r++) {
        const float s = a[r * lda + k];
#pragma GCC unroll 8
        for (int c = 0; c < NC; c++) acc[r * NC + c] += s * wv[c];
      }
    }
  };
  part(x.x, x.lda, 0, x.K1);
  if (K > x.K1) part(x.x2, x.lda2, x.K1, K - x.K1);
  Activate<A>(acc, MR * NC, e);
  if (ncols == NC * L) {
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 8
      for (int c = 0; c < NC; c++) Store<V>(out + r * ldo + c * L, acc[r * NC + c]);
  } else {
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++) {
      float row[NV * kPanel];
#pragma GCC unroll 8
      for (int c = 0; c < NC; c++) Store<V>(row + c * L, acc[r * NC + c]);
      std::memcpy(out + r * ldo, row, ncols * sizeof(float));
    }
  }
}

// ForTiles calls tile(R, m) for tiles of MR rows from m = 0 over M rows, then once for the
// R < MR rows left, R a compile-time constant (std::integral_constant): no padding rows are read
// or written.
template <int MR, typename F>
ONNXRL_ALWAYS_INLINE void ForTiles(int64_t M, F&& tile) {
  int64_t m = 0;
  for (; m + MR <= M; m += MR) tile(std::integral_constant<int, MR>{}, m);
  switch (M - m) {
#define ONNXRL_REST(R)                                                 \
  case R:                                                              \
    if constexpr (R < MR) tile(std::integral_constant<int, R>{}, m); \
    break;
    ONNXRL_REST(1)
    ONNXRL_REST(2)
    ONNXRL_REST(3)
    ONNXRL_REST(4)
    ONNXRL_REST(5)
    ONNXRL_REST(6)
    ONNXRL_REST(7)
#undef ONNXRL_REST
    default:
      break;
  }
}

// Rows runs Tile over M rows for one group of NV panels (or NC vectors of the first panel).
template <typename V, int A, int MR, int NV, int NC = NV * (kPanel / Lanes<V>)>
ONNXRL_ALWAYS_INLINE void Rows(const Src& x, int64_t M, int64_t K, const float* w, int64_t pstride,
                               const float* bias, const Epilogue& e, float* out, int64_t ldo, int64_t ncols) {
  ForTiles<MR>(M, [&](auto r, int64_t m) ONNXRL_INLINE_LAMBDA {
    Tile<V, A, decltype(r)::value, NV, NC>(x.At(m), K, w, pstride, bias, e, out + m * ldo, ldo, ncols);
  });
}

// Blocked walks M in blocks whose rows of x stay in L2 (about 128 KiB), and within a block the
// panels in groups of R::kNV, so that each group of panels stays in L1 while the block's rows
// pass. A last panel of at most 8 columns (a policy's logits and value heads) runs as 8-float
// vectors (R::Half), half the multiply-adds of a whole panel.
template <typename R>
void Blocked(const Src& x, int64_t M, const PackedWeights& w, int64_t n0, int64_t n1, const Epilogue& e, float* out,
             int64_t ldo) {
  constexpr int MR = R::kMR, NV = R::kNV;
  const int64_t K = w.K, pstride = K * kPanel;
  const int64_t p0 = n0 / kPanel, p1 = (n1 + kPanel - 1) / kPanel;
  int64_t mb = std::max<int64_t>(MR, (int64_t{32768} / std::max<int64_t>(K, 1)) / MR * MR);
  for (int64_t m0 = 0; m0 < M; m0 += mb) {
    const int64_t rows = std::min(mb, M - m0);
    const Src xb = x.At(m0);
    float* ob = out + m0 * ldo;
    int64_t p = p0;
    for (; p + NV <= p1; p += NV) {
      int64_t ncols = std::min(n1, (p + NV) * kPanel) - p * kPanel;
      R::Full(xb, rows, K, w.panel(p), pstride, w.bias() + p * kPanel, e, ob + (p * kPanel - n0), ldo, ncols);
    }
    for (; p < p1; p++) {
      int64_t ncols = std::min(n1, (p + 1) * kPanel) - p * kPanel;
      if (ncols * 2 <= kPanel) {
        R::Half(xb, rows, K, w.panel(p), pstride, w.bias() + p * kPanel, e, ob + (p * kPanel - n0), ldo, ncols);
      } else {
        R::One(xb, rows, K, w.panel(p), pstride, w.bias() + p * kPanel, e, ob + (p * kPanel - n0), ldo, ncols);
      }
    }
  }
}

// ByAct runs Blocked with the row loops R<A> compiled for e's activation where it is one that
// policies fuse into their layers (none, ReLU, Tanh), else for any activation (a switch per
// tile, kAnyAct). With the activation known, a tile's sums stay in registers through it; with
// the switch over every activation in the tile they went to the stack and back around it.
template <template <int> class R>
void ByAct(const Src& x, int64_t M, const PackedWeights& w, int64_t n0, int64_t n1, const Epilogue& e, float* out,
           int64_t ldo) {
  switch (e.act) {
    case kActNone:
      return Blocked<R<kActNone>>(x, M, w, n0, n1, e, out, ldo);
    case kActRelu:
      return Blocked<R<kActRelu>>(x, M, w, n0, n1, e, out, ldo);
    case kActTanh:
      return Blocked<R<kActTanh>>(x, M, w, n0, n1, e, out, ldo);
    default:
      return Blocked<R<kAnyAct>>(x, M, w, n0, n1, e, out, ldo);
  }
}

// The row loops' parameters and arguments (Rows).
#define ONNXRL_ROWS_PARAMS                                                                                    \
  const Src &x, int64_t M, int64_t K, const float *w, int64_t pstride, const float *bias, const Epilogue &e, \
      float *out, int64_t ldo, int64_t ncols
#define ONNXRL_ROWS_ARGS x, M, K, w, pstride, bias, e, out, ldo, ncols

// Each instruction set's row loops for activation A: MR rows by NV whole panels (Full), one
// panel (One) and half a panel (Half), each its own function. Inlined all into one function per
// instruction set, as they were, GCC's register allocation of the K loop is at the mercy of the
// rest: with the activations compiled apart in one function it kept half the sums on the stack
// and the narrow MLP's layers took twice as long (ep/bench/mlp_layers.cc).
template <int A>
struct RowsPortable {
  static constexpr int kMR = 3, kNV = 1;
  __attribute__((noinline)) static void Full(ONNXRL_ROWS_PARAMS) { Rows<V4, A, 3, 1>(ONNXRL_ROWS_ARGS); }
  static void One(ONNXRL_ROWS_PARAMS) { Full(ONNXRL_ROWS_ARGS); }
  __attribute__((noinline)) static void Half(ONNXRL_ROWS_PARAMS) {
    Rows<V4, A, 3, 1, kPanel / 2 / Lanes<V4>>(ONNXRL_ROWS_ARGS);
  }
};
#if defined(ONNXRL_X86_ISAS)
template <int A>
struct RowsAvx2 {
  static constexpr int kMR = 6, kNV = 1;
  ONNXRL_TARGET_AVX2 __attribute__((noinline)) static void Full(ONNXRL_ROWS_PARAMS) {
    Rows<V8, A, 6, 1>(ONNXRL_ROWS_ARGS);
  }
  static void One(ONNXRL_ROWS_PARAMS) { Full(ONNXRL_ROWS_ARGS); }
  ONNXRL_TARGET_AVX2 __attribute__((noinline)) static void Half(ONNXRL_ROWS_PARAMS) {
    Rows<V8, A, 6, 1, 1>(ONNXRL_ROWS_ARGS);
  }
};
template <int A>
struct RowsAvx512 {
  static constexpr int kMR = 8, kNV = 2;
  ONNXRL_TARGET_AVX512 __attribute__((noinline)) static void Full(ONNXRL_ROWS_PARAMS) {
    Rows<V16, A, 8, 2>(ONNXRL_ROWS_ARGS);
  }
  ONNXRL_TARGET_AVX512 __attribute__((noinline)) static void One(ONNXRL_ROWS_PARAMS) {
    Rows<V16, A, 8, 1>(ONNXRL_ROWS_ARGS);
  }
  ONNXRL_TARGET_AVX512 __attribute__((noinline)) static void Half(ONNXRL_ROWS_PARAMS) {
    Rows<V8, A, 8, 1, 1>(ONNXRL_ROWS_ARGS);
  }
};
#endif
#undef ONNXRL_ROWS_PARAMS
#undef ONNXRL_ROWS_ARGS

// Span applies e's activation to n floats: vectors of 4 V at a time, then single V, then
// the scalar rest.
template <typename V>
ONNXRL_ALWAYS_INLINE void Span(const Epilogue& e, const float* in, float* out, int64_t n) {
  constexpr int L = Lanes<V>;
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    V v[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) v[j] = Load<V>(in + i + j * L);
    Activate(v, 4, e);
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) Store<V>(out + i + j * L, v[j]);
  }
  for (; i + L <= n; i += L) {
    V v = Load<V>(in + i);
    Activate(&v, 1, e);
    Store<V>(out + i, v);
  }
  for (; i < n; i++) out[i] = ApplyAct(e.act, in[i], e.a, e.b);
}

void SpanPortable(const Epilogue& e, const float* in, float* out, int64_t n) { Span<V4>(e, in, out, n); }

#if defined(ONNXRL_X86_ISAS)
ONNXRL_TARGET_AVX2 void SpanAvx2(const Epilogue& e, const float* in, float* out, int64_t n) {
  Span<V8>(e, in, out, n);
}

ONNXRL_TARGET_AVX512 void SpanAvx512(const Epilogue& e, const float* in,
                                                                             float* out, int64_t n) {
  Span<V16>(e, in, out, n);
}
#endif

}  // namespace

void GemmStacked(const float* x1, int64_t lda1, int64_t K1, const float* x2, int64_t lda2, int64_t M,
                 const PackedWeights& w, int64_t n0, int64_t n1, const Epilogue& e, float* out, int64_t ldo) {
  if (M <= 0 || n1 <= n0) return;
  const Src x{x1, lda1, std::min(K1, w.K), x2, lda2};
  switch (ChosenIsa()) {
#if defined(ONNXRL_X86_ISAS)
    case IsaLevel::kAvx512:
      return ByAct<RowsAvx512>(x, M, w, n0, n1, e, out, ldo);
    case IsaLevel::kAvx2:
      return ByAct<RowsAvx2>(x, M, w, n0, n1, e, out, ldo);
#endif
    default:
      return ByAct<RowsPortable>(x, M, w, n0, n1, e, out, ldo);
  }
}

void Gemm(const float* x, int64_t lda, int64_t M, const PackedWeights& w, int64_t n0, int64_t n1, const Epilogue& e,
          float* out, int64_t ldo) {
  GemmStacked(x, lda, w.K, nullptr, 0, M, w, n0, n1, e, out, ldo);
}

void Activations(const Epilogue& e, const float* in, float* out, int64_t n) {
  if (n <= 0) return;
  if (e.act == kActNone) {
    if (in != out) std::memmove(out, in, n * sizeof(float));
    return;
  }
  switch (ChosenIsa()) {
#if defined(ONNXRL_X86_ISAS)
    case IsaLevel::kAvx512:
      return SpanAvx512(e, in, out, n);
    case IsaLevel::kAvx2:
      return SpanAvx2(e, in, out, n);
#endif
    default:
      return SpanPortable(e, in, out, n);
  }
}

}  // namespace onnxrl_ep

namespace onnxrl_ep {

namespace {

using namespace simd;


// GatherTile is Tile with row r of the left matrix read in place at rows[r][off[k]], and the
// result stored transposed: column j of the tile's row r to outs[r][j * ldo] (outs already
// advanced to the tile's first column). next is the next tile's first row (null for the last):
// its window is prefetched 16 floats ahead while this tile runs, the windows of a large batch's
// first layer coming from memory (measured alone on a batch of 256 in tasks of 64 rows: 46-47
// -> 50 billion multiply-adds per second on the Nature CNN's first layer, 51-53 -> 54-55 on its
// third).
template <typename V, int MR, int NV>
ONNXRL_ALWAYS_INLINE void GatherTile(const float* const* rows, const float* next, const int64_t* off, int64_t K,
                                     const float* w, int64_t pstride, const float* bias, const Epilogue& e,
                                     float* const* outs, int64_t col, int64_t ldo, int64_t ncols) {
  constexpr int L = Lanes<V>, C = kPanel / L, NC = NV * C;
  V acc[MR * NC];
#pragma GCC unroll 8
  for (int c = 0; c < NC; c++) {
    V b = Load<V>(bias + (c / C) * kPanel + (c % C) * L);
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++) acc[r * NC + c] = b;
  }
  const float* base[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; r++) base[r] = rows[r];
  const uintptr_t ahead = reinterpret_cast<uintptr_t>(next) + 16 * sizeof(float);
  for (int64_t k = 0; k < K; k++) {
    const int64_t o = off[k];
    if (next != nullptr) __builtin_prefetch(reinterpret_cast<const void*>(ahead + o * sizeof(float)));
    V wv[NC];
#pragma GCC unroll 8
    for (int c = 0; c < NC; c++) wv[c] = Load<V>(w + (c / C) * pstride + k * kPanel + (c % C) * L);
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++) {
      const float s = base[r][o];
#pragma GCC unroll 8
      for (int c = 0; c < NC; c++) acc[r * NC + c] += s * wv[c];
    }
  }
  Activate(acc, MR * NC, e);
  if constexpr (std::is_same_v<V, V16> && MR == 8) {
    // The usual case, 8 consecutive positions of one image and whole panels: transposed in
    // registers, each column's 8 rows one 8-float store.
    bool consecutive = ncols == NV * kPanel;
    for (int r = 1; r < MR; r++) consecutive = consecutive && outs[r] == outs[0] + r;
    if (consecutive) {
      for (int c = 0; c < NC; c++) StoreTransposed8x16(acc + c, NC, outs[0] + (col + c * kPanel) * ldo, ldo);
      return;
    }
  }
  for (int r = 0; r < MR; r++) {
    float row[NV * kPanel];
    for (int c = 0; c < NC; c++) Store<V>(row + c * L, acc[r * NC + c]);
    float* out = outs[r] + col * ldo;
    for (int64_t j = 0; j < ncols; j++) out[j * ldo] = row[j];
  }
}

template <typename V, int MR, int NV>
ONNXRL_ALWAYS_INLINE void GatherRows(const float* const* rows, const int64_t* off, int64_t M, int64_t K,
                                     const float* w, int64_t pstride, const float* bias, const Epilogue& e,
                                     float* const* outs, int64_t col, int64_t ldo, int64_t ncols) {
  ForTiles<MR>(M, [&](auto r, int64_t m) ONNXRL_INLINE_LAMBDA {
    constexpr int R = decltype(r)::value;
    const float* next = m + R < M ? rows[m + R] : nullptr;
    GatherTile<V, R, NV>(rows + m, next, off, K, w, pstride, bias, e, outs + m, col, ldo, ncols);
  });
}

template <typename V, int MR, int NV>
ONNXRL_ALWAYS_INLINE void GatherBlocked(const float* const* rows, const int64_t* off, int64_t M, const PackedWeights& w,
                                        const Epilogue& e, float* const* outs, int64_t ldo) {
  const int64_t K = w.K, pstride = K * kPanel, panels = w.panels;
  int64_t p = 0;
  for (; p + NV <= panels; p += NV) {
    GatherRows<V, MR, NV>(rows, off, M, K, w.panel(p), pstride, w.bias() + p * kPanel, e, outs, p * kPanel, ldo,
                          std::min(w.N, (p + NV) * kPanel) - p * kPanel);
  }
  for (; p < panels; p++) {
    GatherRows<V, MR, 1>(rows, off, M, K, w.panel(p), pstride, w.bias() + p * kPanel, e, outs, p * kPanel, ldo,
                         std::min(w.N, (p + 1) * kPanel) - p * kPanel);
  }
}

void GatherPortable(const float* const* rows, const int64_t* off, int64_t M, const PackedWeights& w, const Epilogue& e,
                    float* const* outs, int64_t ldo) {
  GatherBlocked<V4, 3, 1>(rows, off, M, w, e, outs, ldo);
}
#if defined(ONNXRL_X86_ISAS)
ONNXRL_TARGET_AVX2 void GatherAvx2(const float* const* rows, const int64_t* off, int64_t M, const PackedWeights& w,
                                   const Epilogue& e, float* const* outs, int64_t ldo) {
  GatherBlocked<V8, 6, 1>(rows, off, M, w, e, outs, ldo);
}
// One panel per tile, not two: a convolution's tile re-reads its panels for every window, and a
// Nature CNN's first layer (K = 256) has both of its panels fill L1 (32 KiB). Measured alone on
// a batch of 32 (GemmGatherT, one thread): 51-52 -> 55 billion multiply-adds per second on that
// layer, 55.5 -> 56.8 and 56.5 -> 57.1 on the next two.
ONNXRL_TARGET_AVX512 void GatherAvx512(const float* const* rows, const int64_t* off, int64_t M,
                                       const PackedWeights& w, const Epilogue& e, float* const* outs, int64_t ldo) {
  GatherBlocked<V16, 8, 1>(rows, off, M, w, e, outs, ldo);
}
#endif

}  // namespace

void GemmGatherT(const float* const* rows, const int64_t* off, int64_t M, const PackedWeights& w, const Epilogue& e,
                 float* const* outs, int64_t ldo) {
  if (M <= 0 || w.N <= 0) return;
  switch (ChosenIsa()) {
#if defined(ONNXRL_X86_ISAS)
    case IsaLevel::kAvx512:
      return GatherAvx512(rows, off, M, w, e, outs, ldo);
    case IsaLevel::kAvx2:
      return GatherAvx2(rows, off, M, w, e, outs, ldo);
#endif
    default:
      return GatherPortable(rows, off, M, w, e, outs, ldo);
  }
}

}  // namespace onnxrl_ep
