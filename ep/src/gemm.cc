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

#include "kernels.h"

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

typedef float V4 __attribute__((vector_size(16)));
typedef float V8 __attribute__((vector_size(32)));
typedef float V16 __attribute__((vector_size(64)));

#define ONNXRL_ALWAYS_INLINE inline __attribute__((always_inline))

// Lanes is a vector type's float count; a panel row is kPanel / Lanes<V> vectors.
template <typename V>
constexpr int Lanes = static_cast<int>(sizeof(V) / sizeof(float));

template <typename V>
ONNXRL_ALWAYS_INLINE V Load(const float* p) {
  typedef float U __attribute__((vector_size(sizeof(V)), aligned(4), may_alias));
  return *reinterpret_cast<const U*>(p);
}
template <typename V>
ONNXRL_ALWAYS_INLINE void Store(float* p, V v) {
  typedef float U __attribute__((vector_size(sizeof(V)), aligned(4), may_alias));
  *reinterpret_cast<U*>(p) = v;
}

// Activate applies e's activation to n vectors (the choice made once per tile).
template <typename V>
ONNXRL_ALWAYS_INLINE void Activate(V* v, int n, const Epilogue& e) {
  switch (e.act) {
    case kActNone:
      break;
    case kActRelu:
#pragma GCC unroll 32
      for (int i = 0; i < n; i++) v[i] = v[i] > 0.0f ? v[i] : 0.0f;
      break;
    case kActLeakyRelu:
#pragma GCC unroll 32
      for (int i = 0; i < n; i++) v[i] = v[i] >= 0.0f ? v[i] : v[i] * e.a;
      break;
    case kActClip:
#pragma GCC unroll 32
      for (int i = 0; i < n; i++) v[i] = v[i] < e.a ? e.a : (v[i] > e.b ? e.b : v[i]);
      break;
    case kActTanh:
#pragma GCC unroll 32
      for (int i = 0; i < n; i++) v[i] = TanhOf(v[i]);
      break;
    case kActSigmoid:
#pragma GCC unroll 32
      for (int i = 0; i < n; i++) v[i] = SigmoidOf(v[i]);
      break;
    case kActErf:
#pragma GCC unroll 32
      for (int i = 0; i < n; i++) v[i] = ErfOf(v[i]);
      break;
    case kActGelu:
#pragma GCC unroll 32
      for (int i = 0; i < n; i++) v[i] = GeluOf(v[i]);
      break;
    default:  // not fused into a matrix multiply (ops/dense.cc): element by element
      for (int i = 0; i < n; i++)
        for (int j = 0; j < Lanes<V>; j++) v[i][j] = ApplyAct(e.act, v[i][j], e.a, e.b);
  }
}

// Tile computes MR rows by NV panels with vectors V (C = kPanel / lanes of them per panel
// row): x points at the tile's first row, w at its first panel (panels pstride floats apart),
// bias at the panel's padded bias; ncols of the NV * 16 columns are stored (the rest are the
// last panel's padding).
template <typename V, int MR, int NV>
ONNXRL_ALWAYS_INLINE void Tile(const float* x, int64_t lda, int64_t K, const float* w, int64_t pstride,
                               const float* bias, const Epilogue& e, float* out, int64_t ldo, int64_t ncols) {
  constexpr int L = Lanes<V>, C = kPanel / L, NC = NV * C;
  V acc[MR * NC];
#pragma GCC unroll 8
  for (int c = 0; c < NC; c++) {
    V b = Load<V>(bias + c * L);
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++) acc[r * NC + c] = b;
  }
  for (int64_t k = 0; k < K; k++) {
    V wv[NC];
#pragma GCC unroll 8
    for (int c = 0; c < NC; c++) wv[c] = Load<V>(w + (c / C) * pstride + k * kPanel + (c % C) * L);
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++) {
      const float s = x[r * lda + k];
#pragma GCC unroll 8
      for (int c = 0; c < NC; c++) acc[r * NC + c] += s * wv[c];
    }
  }
  Activate(acc, MR * NC, e);
  if (ncols == NV * kPanel) {
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 8
      for (int c = 0; c < NC; c++) Store<V>(out + r * ldo + c * L, acc[r * NC + c]);
  } else {
    for (int r = 0; r < MR; r++) {
      float row[NV * kPanel];
      for (int c = 0; c < NC; c++) Store<V>(row + c * L, acc[r * NC + c]);
      std::memcpy(out + r * ldo, row, ncols * sizeof(float));
    }
  }
}

// Rows runs Tile over M rows for one group of NV panels: full tiles of MR rows, then the rest
// with the exact row count (no padding rows are read or written).
template <typename V, int MR, int NV>
ONNXRL_ALWAYS_INLINE void Rows(const float* x, int64_t lda, int64_t M, int64_t K, const float* w, int64_t pstride,
                               const float* bias, const Epilogue& e, float* out, int64_t ldo, int64_t ncols) {
  int64_t m = 0;
  for (; m + MR <= M; m += MR) Tile<V, MR, NV>(x + m * lda, lda, K, w, pstride, bias, e, out + m * ldo, ldo, ncols);
  const float* xr = x + m * lda;
  float* orow = out + m * ldo;
  switch (M - m) {
#define ONNXRL_REST(R)                                                                      \
  case R:                                                                                   \
    if constexpr (R < MR) Tile<V, R, NV>(xr, lda, K, w, pstride, bias, e, orow, ldo, ncols); \
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

// Blocked walks M in blocks whose rows of x stay in L2 (about 128 KiB), and within a block the
// panels in groups of NV, so that each group of panels stays in L1 while the block's rows pass.
template <typename V, int MR, int NV>
ONNXRL_ALWAYS_INLINE void Blocked(const float* x, int64_t lda, int64_t M, const PackedWeights& w, int64_t n0,
                                  int64_t n1, const Epilogue& e, float* out, int64_t ldo) {
  const int64_t K = w.K, pstride = K * kPanel;
  const int64_t p0 = n0 / kPanel, p1 = (n1 + kPanel - 1) / kPanel;
  int64_t mb = std::max<int64_t>(MR, (int64_t{32768} / std::max<int64_t>(K, 1)) / MR * MR);
  for (int64_t m0 = 0; m0 < M; m0 += mb) {
    const int64_t rows = std::min(mb, M - m0);
    const float* xb = x + m0 * lda;
    float* ob = out + m0 * ldo;
    int64_t p = p0;
    for (; p + NV <= p1; p += NV) {
      int64_t ncols = std::min(n1, (p + NV) * kPanel) - p * kPanel;
      Rows<V, MR, NV>(xb, lda, rows, K, w.panel(p), pstride, w.bias() + p * kPanel, e, ob + (p * kPanel - n0),
                      ldo, ncols);
    }
    for (; p < p1; p++) {
      int64_t ncols = std::min(n1, (p + 1) * kPanel) - p * kPanel;
      Rows<V, MR, 1>(xb, lda, rows, K, w.panel(p), pstride, w.bias() + p * kPanel, e, ob + (p * kPanel - n0),
                     ldo, ncols);
    }
  }
}

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

using GemmFn = void (*)(const float*, int64_t, int64_t, const PackedWeights&, int64_t, int64_t, const Epilogue&,
                        float*, int64_t);

using SpanFn = void (*)(const Epilogue&, const float*, float*, int64_t);

void GemmPortable(const float* x, int64_t lda, int64_t M, const PackedWeights& w, int64_t n0, int64_t n1,
                  const Epilogue& e, float* out, int64_t ldo) {
  Blocked<V4, 3, 1>(x, lda, M, w, n0, n1, e, out, ldo);
}
void SpanPortable(const Epilogue& e, const float* in, float* out, int64_t n) { Span<V4>(e, in, out, n); }

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma"))) void GemmAvx2(const float* x, int64_t lda, int64_t M, const PackedWeights& w,
                                                  int64_t n0, int64_t n1, const Epilogue& e, float* out, int64_t ldo) {
  Blocked<V8, 6, 1>(x, lda, M, w, n0, n1, e, out, ldo);
}
__attribute__((target("avx2,fma"))) void SpanAvx2(const Epilogue& e, const float* in, float* out, int64_t n) {
  Span<V8>(e, in, out, n);
}

__attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma"))) void GemmAvx512(const float* x, int64_t lda, int64_t M,
                                                                             const PackedWeights& w, int64_t n0,
                                                                             int64_t n1, const Epilogue& e, float* out,
                                                                             int64_t ldo) {
  Blocked<V16, 8, 2>(x, lda, M, w, n0, n1, e, out, ldo);
}
__attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma"))) void SpanAvx512(const Epilogue& e, const float* in,
                                                                             float* out, int64_t n) {
  Span<V16>(e, in, out, n);
}
#endif

struct Dispatch {
  GemmFn fn;
  SpanFn span;
  const char* name;
};

Dispatch Choose() {
  const char* want = std::getenv("ONNXRL_EP_ISA");
  auto allowed = [&](const char* name) { return want == nullptr || want[0] == '\0' || std::strcmp(want, name) == 0; };
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                __builtin_cpu_supports("avx512vl");
  if (avx512 && allowed("avx512")) return {GemmAvx512, SpanAvx512, "avx512"};
  if (avx2 && (allowed("avx2") || (want != nullptr && std::strcmp(want, "avx512") == 0))) return {GemmAvx2, SpanAvx2, "avx2"};
#endif
  return {GemmPortable, SpanPortable, "portable"};
}

const Dispatch& Chosen() {
  static const Dispatch d = Choose();
  return d;
}

}  // namespace

void Gemm(const float* x, int64_t lda, int64_t M, const PackedWeights& w, int64_t n0, int64_t n1, const Epilogue& e,
          float* out, int64_t ldo) {
  if (M <= 0 || n1 <= n0) return;
  Chosen().fn(x, lda, M, w, n0, n1, e, out, ldo);
}

void Activations(const Epilogue& e, const float* in, float* out, int64_t n) {
  if (n <= 0) return;
  if (e.act == kActNone) {
    if (in != out) std::memmove(out, in, n * sizeof(float));
    return;
  }
  Chosen().span(e, in, out, n);
}

const char* Isa() { return Chosen().name; }

}  // namespace onnxrl_ep
