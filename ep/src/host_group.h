// A fused MLP on the host: the Dense steps of one DenseGroup (ops.h) run tile by tile, each
// tile of rows going through every layer while its activations are still in L1/L2, instead of
// layer by layer over the whole batch; heads that share an activation are one packed matrix.
#pragma once

#include <cstdint>
#include <vector>

#include "gemm.h"
#include "ops/ops.h"

namespace onnxrl_ep {

class HostDenseGroup {
 public:
  // The constructor packs the heads side by side when they share one activation (and releases
  // their unpacked weights); merged() then says so. The trunk's steps and unmerged heads are
  // prepared by their own PrepareHost.
  HostDenseGroup(Plan& plan, const DenseGroup& g);
  bool merged() const { return !merged_.empty(); }
  // feature_major() says that the group runs batches of kFmMinRows rows or more in the
  // feature-major form (below), from its own copies of its steps' weights; smaller ones run
  // row-major from the steps' packed weights.
  bool feature_major() const { return !fm_.empty(); }
  // The bounds of the feature-major form: the widest input or layer, and the fewest rows.
  static constexpr int64_t kFmMaxWidth = 64;
  static constexpr int64_t kFmMinRows = 256;
  // Run computes the group for the run of c (c.step is the group's first step).
  void Run(ExecContext& c) const;

 private:
  // Tiles computes rows [m0, m1) of the group in tiles of tile_ rows.
  void Tiles(const float* x, int64_t m0, int64_t m1, float* const* outs) const;
  // TilesFm is Tiles in the feature-major form.
  void TilesFm(const float* x, int64_t m0, int64_t m1, float* const* outs) const;

  // The feature-major form (AVX-512, merged heads): a tile's activations are stored transposed,
  // one row of tile floats per feature, so that a vector holds 16 rows of one feature and a
  // layer multiplies them by broadcast weights. The merged heads then take a multiply-add per
  // column used (a logits-and-value pair: 5 of 16 rows each) where the row-major form took one
  // per 8 padded columns of one row. Each layer's W [K][N] (the heads' merged) and bias.
  struct FmLayer {
    int64_t K = 0, N = 0;
    std::vector<float> w, bias;
    Epilogue e;
  };
  std::vector<FmLayer> fm_;  // the trunk's layers, then the merged heads; empty: row-major form

  std::vector<const DenseKernel*> trunk_, heads_;
  int in_ = -1;               // the group's input value
  PackedWeights merged_;      // the heads' weights side by side (merged())
  Epilogue merged_epi_;       // their shared activation
  std::vector<int64_t> col_;  // each head's first column in merged_
  int64_t width_ = 0;         // the widest trunk layer's output
  int64_t macs_ = 0;          // multiply-adds per row, all layers
  int64_t tile_ = 0;          // rows per tile
  int64_t fm_tile_ = 0;       // rows per tile of the feature-major form (whole 64-row blocks)
};

}  // namespace onnxrl_ep
