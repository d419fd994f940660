// The kernels other code inspects by type (dynamic_cast): Dense, Binary and Unary for the
// fusions (dense.cc), Dense and the recurrent kernels for other backends. The other kernels are
// private to their op files.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "../gemm.h"
#include "../host.h"
#include "../kernel.h"

namespace onnxrl_ep {

// DenseKernel (MatMul, Gemm): out = act(A @ W + bias); A [..., K], W [K, N] packed once.
struct DenseKernel : Kernel {
  const char* Kind() const override { return "Dense"; }
  void Infer(InferContext& c) const override;
  void Host(ExecContext& c) const override;
  void Device(DeviceContext& c) const override;

  // PrepareHost packs w and bias into packed and releases them (the host backend keeps one copy).
  void PrepareHost() override;

  int64_t K = 0, N = 0;
  int64_t in_rank = 0;         // the input's rank at lowering (MatMul: any; Gemm: 2)
  std::vector<float> w, bias;  // W [K][N] (Gemm's alpha and transB folded), bias [N] (empty: none)
  int32_t act = kActNone;      // an Act fused in
  float a = 0, b = 0;          // the activation's parameters (LeakyRelu alpha, Clip min/max)
  PackedWeights packed;        // the host backend's form of w and bias (PrepareHost)
};

// FuseGelu replaces each exact GELU written as Div, Erf, Add, Mul, Mul by one Unary step
// (kActGelu), which Fuse then folds into a preceding Dense or LayerNorm (ops/unary.cc).
void FuseGelu(Plan& p);
// FuseIntoLayerNorm folds an activation that only reads a LayerNorm's output into it, once;
// true when it did (ops/layernorm.cc).
bool FuseIntoLayerNorm(Plan& p);

// DenseGroup: Dense steps that an executor runs as one (a fused MLP): a chain (trunk) whose
// last output only the heads read, or heads alone that share one input. Steps by index.
struct DenseGroup {
  std::vector<size_t> trunk, heads;
};

// FindDenseGroups finds the plan's groups, keyed by each one's first step: at most max_layers
// steps (trunk and heads), max_heads heads, no layer wider than max_width, at least two steps.
// Intermediates the group consumes are read by nothing else and are no fused output.
std::map<size_t, DenseGroup> FindDenseGroups(const Plan& p, size_t max_layers, size_t max_heads, int64_t max_width);

// BinaryKernel (Add, Sub, Mul, Div, Pow with a tensor exponent): broadcasting. Its run.aux holds
// both inputs' element strides per output dimension, A's then B's.
struct BinaryKernel : Kernel {
  const char* Kind() const override { return "Binary"; }
  void Infer(InferContext& c) const override;
  void Host(ExecContext& c) const override;
  void Device(DeviceContext& c) const override;

  int32_t op = kBinAdd;  // a Bin
};

// UnaryKernel (Relu, LeakyRelu, Tanh, Sigmoid, Exp, Log, Neg, Clip, Erf, Sqrt, Pow with a constant
// scalar exponent): elementwise.
struct UnaryKernel : Kernel {
  const char* Kind() const override { return "Unary"; }
  void Infer(InferContext& c) const override;
  void Host(ExecContext& c) const override;
  void Device(DeviceContext& c) const override;

  int32_t act = kActNone;  // an Act
  float a = 0, b = 0;      // LeakyRelu alpha, Clip min/max, Pow's exponent
};

// RnnKernel: an LSTM or GRU, one layer: forward, reverse or bidirectional (D = 1 or 2
// directions). in = {X, initial_h, initial_c (LSTM; else -1)}, out = {Y, Y_h, Y_c (LSTM)}, each
// -1 when absent. Y is [T, D, B, H], the states [D, B, H].
struct RnnKernel : Kernel {
  void Infer(InferContext& c) const override;
  // Gates is 4 for an LSTM, 3 for a GRU.
  virtual int64_t Gates() const = 0;
  RnnWeights Weights(size_t d) const {
    const Direction& w = dirs[d];
    RnnWeights r{I, H, w.wx.data(), w.wh.data(), w.bx.data(), w.bh.data()};
    if (!w.px.empty()) {
      r.x = &w.px;
      r.h = &w.ph;
      r.hn = &w.phn;
    }
    return r;
  }
  // PrepareHost packs each direction's weights (RnnPack) and releases the raw ones.
  void PrepareHost() override;

  struct Direction {
    bool reverse = false;               // from the last step to the first
    std::vector<float> wx, wh, bx, bh;  // Wx [I][G*H], Wh [H][G*H], biases [G*H]
    PackedWeights px, ph, phn;          // the host backend's forms (host.h, RnnWeights)
  };
  int64_t H = 0, I = 0;
  std::vector<Direction> dirs;  // one, or two (bidirectional: forward, then reverse)
};

struct LstmKernel : RnnKernel {
  const char* Kind() const override { return "Lstm"; }
  int64_t Gates() const override { return 4; }
  void Host(ExecContext& c) const override;
  void Device(DeviceContext& c) const override;
};

struct GruKernel : RnnKernel {
  const char* Kind() const override { return "Gru"; }
  int64_t Gates() const override { return 3; }
  void Host(ExecContext& c) const override;
  void Device(DeviceContext& c) const override;

  bool lbr = false;  // linear_before_reset
};

}  // namespace onnxrl_ep
