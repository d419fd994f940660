// The provider's arithmetic, element by element. The same source compiles as C++ for the host
// backend and as CUDA C for the device backend (ONNXRL_HD marks functions for both), so the
// host tests check the arithmetic the GPU runs. No state, no allocation, no library calls but
// expf/logf/tanhf.
#pragma once

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define ONNXRL_HD __host__ __device__
#else
#define ONNXRL_HD
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
};

// Binary elementwise ops.
enum Bin : int32_t { kBinAdd = 0, kBinSub, kBinMul, kBinDiv };

ONNXRL_HD inline float Sigmoid(float x) {
  // Both branches keep exp's argument non-positive, so nothing overflows.
  if (x >= 0.0f) {
    float e = expf(-x);
    return 1.0f / (1.0f + e);
  }
  float e = expf(x);
  return e / (1.0f + e);
}

// ApplyAct: a is LeakyRelu's alpha or Clip's minimum, b is Clip's maximum.
ONNXRL_HD inline float ApplyAct(int32_t act, float x, float a, float b) {
  switch (act) {
    case kActRelu:
      return x > 0.0f ? x : 0.0f;
    case kActLeakyRelu:
      return x >= 0.0f ? x : a * x;
    case kActTanh:
      return tanhf(x);
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
  float cand = tanhf(gc);
  float cn = f * (*c) + i * cand;
  *c = cn;
  return o * tanhf(cn);
}

// GruGates: z and r from their pre-activation sums.
ONNXRL_HD inline float GruGate(float g) { return Sigmoid(g); }

// GruOut: the new hidden value from the update gate z, the candidate's pre-activation sum and
// the previous hidden value.
ONNXRL_HD inline float GruOut(float z, float hpre, float hprev) {
  float cand = tanhf(hpre);
  return (1.0f - z) * cand + z * hprev;
}

}  // namespace onnxrl_ep
