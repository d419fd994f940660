// The provider's arithmetic, element by element. The same source compiles as C++ for the host
// backend and as CUDA C for the device backend (ONNXRL_HD marks functions for both), so the
// host tests check the arithmetic the GPU runs. No state, no allocation, no library calls but
// expf/logf/sqrtf/powf.
#pragma once

#if defined(__CUDACC_RTC__)
// NVRTC has no C library headers: the fixed-width types it needs; expf, logf, sqrtf and powf
// are builtins.
typedef int int32_t;
typedef long long int64_t;
#define INFINITY __int_as_float(0x7f800000)
#else
#include <math.h>
#include <stdint.h>
#endif

#if defined(__CUDACC__)
#define ONNXRL_HD __host__ __device__
#define ONNXRL_FORCE_INLINE __forceinline__
#else
#define ONNXRL_HD
// Inlined even into a caller compiled for another instruction set (gemm.cc's AVX-512 and AVX2
// micro-kernels), where a call would pass vectors through memory to scalar code.
#define ONNXRL_FORCE_INLINE inline __attribute__((always_inline))
#endif

namespace onnxrl_ep {

// Activations fused into a matrix multiply (and the unary elementwise ops).
enum Act : int32_t {
  kActNone = 0,
  kActRelu,
  kActLeakyRelu,
  kActTanh,
  kActSigmoid,
  kActExp,
  kActLog,
  kActClip,
  kActNeg,
  kActErf,
  kActSqrt,
  kActSquare,  // Pow with the constant exponent 2
  kActPow,     // Pow with another constant exponent a
  kActGelu,    // x * (1 + erf(x / sqrt 2)) / 2, the exact GELU (fused from its ONNX pattern, unary.cc)
};

// Binary elementwise ops.
enum Bin : int32_t { kBinAdd = 0, kBinSub, kBinMul, kBinDiv, kBinPow };

// SymClamp<T>::Of(x, lim): x clamped to [-lim, lim] by two ternaries, each keeping x when its
// comparison is false, so that a NaN passes through. GCC compiles them on vectors as a compare
// and a blend each; the host backend specializes this for its AVX2 and AVX-512 vectors
// (simd.h) as one max and one min instruction with the same result for every input.
template <typename T>
struct SymClamp {
  static ONNXRL_HD ONNXRL_FORCE_INLINE T Of(T x, float lim) {
    T c = x < -lim ? -lim : x;
    return c > lim ? lim : c;
  }
};

// Tanh: a rational approximation x P(x^2) / Q(x^2), P of degree 4 and Q of degree 3 (a minimax
// fit of the absolute error on [0, 8.25], 2.8e-7 in exact arithmetic; within 6.5e-7 of the exact
// value in float, with and without fused multiply-adds, ep/tests/kernels_test.cc), on x clamped
// to [-7.703444, 7.703444]: the float from which the quotient rounds to 1 or above with and
// without fused multiply-adds, so that with the result clamped to [-1, 1] Tanh is exactly 1 from
// there (Sigmoid exactly 0 and 1 from twice that, as the CPU provider's). P is the product of
// two quadratics in s = x^2, each s (s + a) + b (an addition, which the vector units run beside
// the multiplies, and one multiply-add), Q by Horner's rule scaled by P's leading coefficient:
// 10 multiplies, multiply-adds and the division's share per vector where the degree 13 / 6 form
// before it took 13 (the multiply units bound it: 2,048 AVX-512 vectors 7.8 -> 6.5 µs,
// ep/bench/mlp_layers.cc). For tiny and subnormal x the quotient is x B1 B2 / Q0, within two ulp
// of x, with no branch of its own. Written as a template without branches so that the same
// expression serves a float and, on the host, a GCC vector of floats (the fused dense kernels'
// epilogue, gemm.cc), where every operation is one vector instruction (each clamp two,
// SymClamp). Fitted by Lawson's reweighted least squares on x P(s) - tanh(x) Q(s) (numpy).
template <typename T>
ONNXRL_HD ONNXRL_FORCE_INLINE T TanhOf(T x) {
  T c = SymClamp<T>::Of(x, 7.703444f);
  T s = c * c;
  T n1 = s * (s + -1.251221985e+03f) + -3.901827545e+05f;
  T n2 = s * (s + 5.426159366e+01f) + 4.386817619e+02f;
  T q = s * -3.317718815e+04f + -3.894585328e+06f;
  q = q * s + -7.877585229e+07f;
  q = q * s + -1.711660582e+08f;
  return SymClamp<T>::Of((c * n1) * n2 / q, 1.0f);
}

// Sigmoid through Tanh: 1/(1+e^-x) = (1 + tanh(x/2)) / 2.
template <typename T>
ONNXRL_HD ONNXRL_FORCE_INLINE T SigmoidOf(T x) {
  return TanhOf(x * 0.5f) * 0.5f + 0.5f;
}

// Erf: erf(x) = x P(x^2) / Q(x^2), P and Q of degree 5, a rational fit on [0, 3.925] (erf
// rounds to +-1 in float32 beyond), within 3.5e-7 of the exact value in float32 arithmetic
// (ep/tests/kernels_test.cc; the fit itself 1.7e-8), clamped to [-1, 1]. Branch-free like
// TanhOf, for vectors too.
template <typename T>
ONNXRL_HD ONNXRL_FORCE_INLINE T ErfOf(T x) {
  T c = SymClamp<T>::Of(x, 3.925f);
  T s = c * c;
  T p = s * 2.030872543e-06f + 2.874919800e-04f;
  p = p * s + 3.876313990e-03f;
  p = p * s + 5.308431054e-02f;
  p = p * s + 1.929722286e-01f;
  p = p * s + 1.128379020e+00f;
  T q = s * 3.803147336e-05f + 1.189747137e-03f;
  q = q * s + 1.518832881e-02f;
  q = q * s + 1.151673260e-01f;
  q = q * s + 5.043488227e-01f;
  q = q * s + 1.0f;
  T r = c * p / q;
  return SymClamp<T>::Of(r, 1.0f);  // the fit rounds up to 2 ulp past 1 near 3.7
}

// Gelu: the exact (erf) form, x (1 + erf(x / sqrt 2)) / 2.
template <typename T>
ONNXRL_HD ONNXRL_FORCE_INLINE T GeluOf(T x) {
  return x * (ErfOf(x * 0.70710678118654752f) * 0.5f + 0.5f);
}

ONNXRL_HD inline float Tanh(float x) { return TanhOf(x); }
ONNXRL_HD inline float Sigmoid(float x) { return SigmoidOf(x); }

// ApplyAct: a is LeakyRelu's alpha, Clip's minimum or Pow's exponent, b is Clip's maximum.
ONNXRL_HD inline float ApplyAct(int32_t act, float x, float a, float b) {
  switch (act) {
    case kActRelu:
      return x < 0.0f ? 0.0f : x;  // NaN stays NaN, as the CPU provider's
    case kActLeakyRelu:
      return x >= 0.0f ? x : a * x;
    case kActTanh:
      return Tanh(x);
    case kActSigmoid:
      return Sigmoid(x);
    case kActExp:
      return expf(x);
    case kActLog:
      return logf(x);
    case kActClip:
      return x < a ? a : (x > b ? b : x);
    case kActNeg:
      return -x;
    case kActErf:
      return ErfOf(x);
    case kActGelu:
      return GeluOf(x);
    case kActSqrt:
      return sqrtf(x);
    case kActSquare:
      return x * x;
    case kActPow:
      return powf(x, a);
    default:
      return x;
  }
}

ONNXRL_HD inline float ApplyBin(int32_t op, float x, float y) {
  switch (op) {
    case kBinAdd:
      return x + y;
    case kBinSub:
      return x - y;
    case kBinMul:
      return x * y;
    case kBinPow:
      return powf(x, y);
    default:
      return x / y;
  }
}

// LstmCellOf: one hidden unit of one row (a float), or of a vector of rows or units on the
// host (cells.cc, lstm_strassen.cc), gates in ONNX order i, o, f, c (pre-activation sums,
// biases included). Updates *c and returns the new h.
template <typename T>
ONNXRL_HD ONNXRL_FORCE_INLINE T LstmCellOf(T gi, T go, T gf, T gc, T* c) {
  T i = SigmoidOf(gi);
  T o = SigmoidOf(go);
  T f = SigmoidOf(gf);
  T cand = TanhOf(gc);
  T cn = f * (*c) + i * cand;
  *c = cn;
  return o * TanhOf(cn);
}
ONNXRL_HD inline float LstmCell(float gi, float go, float gf, float gc, float* c) {
  return LstmCellOf(gi, go, gf, gc, c);
}

// GruGates: z and r from their pre-activation sums.
ONNXRL_HD inline float GruGate(float g) { return Sigmoid(g); }

// GruOut: the new hidden value from the update gate z, the candidate's pre-activation sum and
// the previous hidden value.
ONNXRL_HD inline float GruOut(float z, float hpre, float hprev) {
  float cand = Tanh(hpre);
  return (1.0f - z) * cand + z * hprev;
}

}  // namespace onnxrl_ep
