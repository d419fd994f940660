// The host backend's vector arithmetic: GCC vector types of 4, 8 and 16 floats, loads and
// stores, and the activations of kernels.h applied to whole vectors; and the instruction set
// chosen once at load time. Each file with hot loops (gemm.cc, cells.cc) compiles its loops
// once per instruction set, inside functions marked ONNXRL_TARGET_AVX2 or ONNXRL_TARGET_AVX512,
// and calls the one ChosenIsa() names. Every helper here is always_inline: vectors never cross
// a call (files including this one are compiled with -Wno-psabi, ep/CMakeLists.txt).
#pragma once

#include <cstdint>

#include "gemm.h"
#include "kernels.h"

namespace onnxrl_ep {

enum class IsaLevel { kPortable, kAvx2, kAvx512 };
// ChosenIsa: AVX-512 (F, DQ, VL) or AVX2+FMA where the CPU has them, else portable; the
// environment variable ONNXRL_EP_ISA (avx512, avx2, portable) picks a lower one. Decided once.
IsaLevel ChosenIsa();

#if defined(__x86_64__) && defined(__GNUC__)
#define ONNXRL_X86_ISAS 1
#define ONNXRL_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define ONNXRL_TARGET_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma")))
#endif

namespace simd {

#define ONNXRL_ALWAYS_INLINE inline __attribute__((always_inline))

typedef float V4 __attribute__((vector_size(16)));
typedef float V8 __attribute__((vector_size(32)));
typedef float V16 __attribute__((vector_size(64)));

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

typedef int32_t I16 __attribute__((vector_size(64)));

// StoreTransposed8x16 stores 8 rows of 16 columns, row r in v[r * stride], transposed: column
// j's 8 values as one 8-float store at out + j * ldo. Three rounds of two-register shuffles
// (one vpermt2ps each): pairs of rows, fours, eights.
ONNXRL_ALWAYS_INLINE void StoreTransposed8x16(const V16* v, int stride, float* out, int64_t ldo) {
  // p[k][h]: lanes 2m, 2m + 1 are rows 2k, 2k + 1 of column 8h + m.
  const I16 pair0 = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23}, pair1 = pair0 + 8;
  // q[g][h][s]: lanes 4n .. 4n + 3 are rows 4g .. 4g + 3 of column 8h + 4s + n.
  const I16 quad0 = {0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23}, quad1 = quad0 + 8;
  // z: lanes 0-7 are the 8 rows of column 8h + 4s + 2e, lanes 8-15 of the next one.
  const I16 oct0 = {0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23}, oct1 = oct0 + 8;
  V16 p[4][2], q[2][2][2];
#pragma GCC unroll 4
  for (int k = 0; k < 4; k++) {
    p[k][0] = __builtin_shuffle(v[2 * k * stride], v[(2 * k + 1) * stride], pair0);
    p[k][1] = __builtin_shuffle(v[2 * k * stride], v[(2 * k + 1) * stride], pair1);
  }
#pragma GCC unroll 2
  for (int g = 0; g < 2; g++)
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
      q[g][h][0] = __builtin_shuffle(p[2 * g][h], p[2 * g + 1][h], quad0);
      q[g][h][1] = __builtin_shuffle(p[2 * g][h], p[2 * g + 1][h], quad1);
    }
  typedef float V8u __attribute__((vector_size(32), aligned(4), may_alias));
#pragma GCC unroll 2
  for (int h = 0; h < 2; h++)
#pragma GCC unroll 2
    for (int s = 0; s < 2; s++)
#pragma GCC unroll 2
      for (int e = 0; e < 2; e++) {
        const V16 z = __builtin_shuffle(q[0][h][s], q[1][h][s], e == 0 ? oct0 : oct1);
        const int64_t c = 8 * h + 4 * s + 2 * e;
        *reinterpret_cast<V8u*>(out + c * ldo) = V8u{z[0], z[1], z[2], z[3], z[4], z[5], z[6], z[7]};
        *reinterpret_cast<V8u*>(out + (c + 1) * ldo) = V8u{z[8], z[9], z[10], z[11], z[12], z[13], z[14], z[15]};
      }
}

}  // namespace simd

#if defined(ONNXRL_X86_ISAS)
// kernels.h's clamp on AVX-512 and AVX2 vectors: vmaxps(-lim, x) is "-lim > x ? -lim : x" and
// vminps(lim, c) "lim < c ? lim : c", the ternaries of the generic form (a NaN x passes through
// both, as there), in two instructions where GCC makes a compare and a blend of each ternary
// (measured alone, 2,048 AVX-512 vectors of Tanh: 9.0 -> 7.6 µs). Inline assembly, because an
// intrinsic cannot be inlined into TanhOf, which has no target attribute; it is only ever
// inlined into functions compiled for AVX2 or AVX-512 (gemm.cc, cells.cc), where these vectors
// live in ymm or zmm registers (the ABI note GCC gives for their signatures does not apply).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
template <>
struct SymClamp<simd::V16> {
  static ONNXRL_FORCE_INLINE simd::V16 Of(simd::V16 x, float lim) {
    const simd::V16 lo = simd::V16{} - lim, hi = simd::V16{} + lim;
    simd::V16 c;
    asm("vmaxps %1, %2, %0" : "=v"(c) : "v"(x), "v"(lo));
    asm("vminps %1, %2, %0" : "=v"(c) : "v"(c), "v"(hi));
    return c;
  }
};
template <>
struct SymClamp<simd::V8> {
  static ONNXRL_FORCE_INLINE simd::V8 Of(simd::V8 x, float lim) {
    const simd::V8 lo = simd::V8{} - lim, hi = simd::V8{} + lim;
    simd::V8 c;
    asm("vmaxps %1, %2, %0" : "=v"(c) : "v"(x), "v"(lo));
    asm("vminps %1, %2, %0" : "=v"(c) : "v"(c), "v"(hi));
    return c;
  }
};
#pragma GCC diagnostic pop
#endif

namespace simd {

// kAnyAct as Activate's A: the activation is e.act, chosen at run time.
constexpr int kAnyAct = -1;

// Activate applies e's activation to n vectors: A when it names one (a tile compiled for that
// activation, its accumulators kept in registers through it), else e.act (chosen once per tile).
template <int A = kAnyAct, typename V>
ONNXRL_ALWAYS_INLINE void Activate(V* v, int n, const Epilogue& e) {
  switch (A == kAnyAct ? e.act : A) {
    case kActNone:
      break;
    case kActRelu:
#pragma GCC unroll 32
      for (int i = 0; i < n; i++) v[i] = v[i] < 0.0f ? 0.0f : v[i];  // NaN stays NaN
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

}  // namespace simd

}  // namespace onnxrl_ep
