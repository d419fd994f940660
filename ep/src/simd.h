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

// Activate applies e's activation to n vectors (the choice made once per tile).
template <typename V>
ONNXRL_ALWAYS_INLINE void Activate(V* v, int n, const Epilogue& e) {
  switch (e.act) {
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
