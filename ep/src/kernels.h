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

// Tanh: a rational approximation, odd numerator of degree 13 over an even denominator of
// degree 6 on [-7.9053, 7.9053] (tanh rounds to +-1 in float32 beyond), a few ulp from the
// exact value. Written as a template without branches (ternaries only) so that the same
// expression serves a float and, on the host, a GCC vector of floats (the fused dense kernels'
// epilogue, gemm.cc), where every operation is one vector instruction.
template <typename T>
ONNXRL_HD ONNXRL_FORCE_INLINE T TanhOf(T x) {
  const float lim = 7.90531110763549805f;
  T c = x > lim ? lim : (x < -lim ? -lim : x);
  T x2 = c * c;
  T p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  p = p * c;
  T q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  T r = p / q;
  // |x| < 0.0004 (tanh(x) rounds to x), written as one comparison: a vector && is done lane
  // by lane.
  return x * x < 1.6e-7f ? x : r;
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
  const float lim = 3.925f;
  T c = x > lim ? lim : (x < -lim ? -lim : x);
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
  return r > 1.0f ? 1.0f : (r < -1.0f ? -1.0f : r);  // the fit rounds up to 2 ulp past 1 near 3.7
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

// LstmCell: one hidden unit of one row, gates in ONNX order i, o, f, c (pre-activation sums,
// biases included). Updates *c and returns the new h.
ONNXRL_HD inline float LstmCell(float gi, float go, float gf, float gc, float* c) {
  float i = Sigmoid(gi);
  float o = Sigmoid(go);
  float f = Sigmoid(gf);
  float cand = Tanh(gc);
  float cn = f * (*c) + i * cand;
  *c = cn;
  return o * Tanh(cn);
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
