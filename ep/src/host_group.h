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
  // Run computes the group for the run of c (c.step is the group's first step).
  void Run(ExecContext& c) const;

 private:
  // Tiles computes rows [m0, m1) of the group in tiles of tile_ rows.
  void Tiles(const float* x, int64_t m0, int64_t m1, float* const* outs) const;

  std::vector<const DenseKernel*> trunk_, heads_;
  int in_ = -1;               // the group's input value
  PackedWeights merged_;      // the heads' weights side by side (merged())
  Epilogue merged_epi_;       // their shared activation
  std::vector<int64_t> col_;  // each head's first column in merged_
  int64_t width_ = 0;         // the widest trunk layer's output
  int64_t macs_ = 0;          // multiply-adds per row, all layers
  int64_t tile_ = 0;          // rows per tile
};

}  // namespace onnxrl_ep
