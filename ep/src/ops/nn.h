// The kernels of the convolutional and normalization operators (Conv, MaxPool, AveragePool,
// LayerNormalization, ReduceMean, Pad), declared here so that the tests can build plans of them
// by hand; each is defined in its op file.
#pragma once

#include <cstdint>
#include <vector>

#include "../gemm.h"
#include "../host.h"
#include "../kernel.h"

namespace onnxrl_ep {

// Window2d is a 2-D sliding window: kernel, strides, dilations and pads (top, left, bottom,
// right), as Conv and the pools share them.
struct Window2d {
  int64_t kh = 1, kw = 1;
  int64_t sh = 1, sw = 1;
  int64_t dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  bool ceil = false;  // the pools' ceil_mode

  // OutH and OutW are the output's height and width for an input of height h and width w; -1
  // when the (dilated) kernel does not fit in the padded input.
  int64_t OutH(int64_t h) const { return Out(h, kh, sh, dh, pt, pb); }
  int64_t OutW(int64_t w) const { return Out(w, kw, sw, dw, pl, pr); }
  int64_t Out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1) const;
};

// ReadWindow reads a node's kernel_shape (kh and kw when absent; Conv passes its weight's),
// strides, dilations and pads; it refuses auto_pad other than NOTSET and anything not 2-D.
Window2d ReadWindow(const OrtNode* n, int64_t kh, int64_t kw);

// ConvKernel (Conv, 2-D NCHW): y[n][oc] = act(bias[oc] + sum over the group's channels and the
// window of x * w). Host: each group's weights packed once as W_g^T [Cg*KH*KW][OCg] with its
// bias (PrepareHost); runs of output positions, counted across the batch's images in whole
// tiles and spread over the session's threads, are multiplied with them by GemmGatherT
// (gemm.h), which reads each position's window in place through the offsets in run.aux
// (unpadded; padded: from rows of patches unfolded into a thread's buffer), applies bias and
// activation in registers and stores NCHW. A kernel twice its stride or a 3x3 one of stride 1
// (one group, no pads or dilation, enough channels) runs as Winograd F(2x2, 2x2) or F(2x2, 3x3)
// instead: packed holds its 9 or 16 transformed weight matrices, which ordinary multiplies
// (gemm.h) apply to transformed inputs.
struct ConvKernel : Kernel {
  const char* Kind() const override { return "Conv"; }
  void Infer(InferContext& c) const override;
  void Host(ExecContext& c) const override;
  void Device(DeviceContext& c) const override;
  // PrepareHost packs each group's weights and bias (w and bias are kept: the CUDA backend's
  // and the tests' form).
  void PrepareHost() override;
  // Padded: any pad, so that windows are unfolded into patches rather than read in place.
  bool Padded() const;

  int64_t C = 0, OC = 0, group = 1;
  Window2d win;
  std::vector<float> w;     // [OC][C/group][KH][KW], ONNX's layout
  std::vector<float> bias;  // [OC]; empty: none
  int32_t act = kActNone;   // an activation fused in (FuseIntoConv)
  float a = 0, b = 0;       // its parameters
  std::vector<PackedWeights> packed;  // per group, the host backend's form (PrepareHost); Winograd: 9 or 16
};

// FuseIntoConv folds an activation (one Gemm's epilogue applies) that is the only reader of a
// Conv's output into it, once; true when it did (ops/conv.cc, called by Fuse).
bool FuseIntoConv(Plan& p);

// PoolKernel (MaxPool, AveragePool, 2-D NCHW); host: runs of planes over the session's
// threads. Padding never wins a max; an average divides by the window's elements within the
// input, or with count_include_pad by the kernel's size (as the CPU provider does, also for a
// ceil_mode window that reaches past the padded input).
struct PoolKernel : Kernel {
  const char* Kind() const override { return "Pool"; }
  void Infer(InferContext& c) const override;
  void Host(ExecContext& c) const override;
  void Device(DeviceContext& c) const override;

  // Planes pools planes [p0, p1) of x [planes][H][W] into y [planes][OH][OW].
  void Planes(const float* x, float* y, int64_t p0, int64_t p1, int64_t H, int64_t W, int64_t OH, int64_t OW) const;

  bool max = true;
  bool include_pad = false;  // AveragePool's count_include_pad
  Window2d win;
};

// LayerNormKernel (LayerNormalization): each row of the dimensions from axis on normalized to
// zero mean and unit variance (epsilon added to the variance), then scaled and shifted, then
// passed through a fused activation.
struct LayerNormKernel : Kernel {
  const char* Kind() const override { return "LayerNorm"; }
  void Infer(InferContext& c) const override;
  void Host(ExecContext& c) const override;
  void Device(DeviceContext& c) const override;

  int64_t axis = -1;
  float epsilon = 1e-5f;
  std::vector<float> scale, bias;  // the row's length each; bias empty: none
  int32_t act = kActNone;          // an activation fused in (FuseIntoLayerNorm)
  float a = 0, b = 0;              // its parameters
};

// ReduceMeanKernel (ReduceMean): the mean over constant axes (empty: all of them, unless
// noop). Its run.aux holds the output's dims with the reduced ones as 1, then the input's dims.
struct ReduceMeanKernel : Kernel {
  const char* Kind() const override { return "ReduceMean"; }
  void Infer(InferContext& c) const override;
  void Host(ExecContext& c) const override;
  void Device(DeviceContext& c) const override;

  std::vector<int64_t> axes;  // as given (may be negative)
  bool keepdims = true;
  bool noop = false;  // noop_with_empty_axes with no axes: the input unchanged
};

// PadKernel (Pad, constant mode): constant pads (begin per dimension, then end; negative ones
// crop) filled with value.
struct PadKernel : Kernel {
  const char* Kind() const override { return "Pad"; }
  void Infer(InferContext& c) const override;
  void Host(ExecContext& c) const override;
  void Device(DeviceContext& c) const override;

  std::vector<int64_t> pads;
  float value = 0;
};

}  // namespace onnxrl_ep
