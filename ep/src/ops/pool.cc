// MaxPool and AveragePool: 2-D NCHW; kernel_shape, strides, pads, ceil_mode (and MaxPool's
// dilations, AveragePool's count_include_pad). Refused: MaxPool's Indices output,
// storage_order=1, auto_pad other than NOTSET.
#include <algorithm>
#include <cfloat>

#include "../gemm.h"
#include "../lower_util.h"
#include "nn.h"
#include "../cuda/device_args.h"
#include "../cuda/device_context.h"

namespace onnxrl_ep {

namespace {

void LowerPool(const OrtNode* n, Plan& p) {
  const bool max = OpType(n) == "MaxPool";
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  auto sh = Shape(ins.at(0));
  if (!sh || sh->size() != 4) Unsupported("an input that is not 4-D (only 2-D NCHW pooling)");
  if (max && Present(outs, 1)) Unsupported("the Indices output");
  if (max && AttrInt(n, "storage_order", 0) != 0) Unsupported("storage_order=1");
  if (!max && HasAttr(n, "dilations")) {
    auto d = AttrInts(n, "dilations");
    for (int64_t v : *d)
      if (v != 1) Unsupported("AveragePool with dilations");
  }
  auto s = std::make_unique<PoolKernel>();
  s->node = NodeName(n);
  s->max = max;
  s->win = ReadWindow(n, 0, 0);
  s->win.ceil = AttrInt(n, "ceil_mode", 0) != 0;
  s->include_pad = !max && AttrInt(n, "count_include_pad", 0) != 0;
  s->in = {In(p, ins[0])};
  s->out = {Out(p, outs.at(0))};
  p.steps.push_back(std::move(s));
}

const OpRegistrar kRegistrar({"MaxPool", "AveragePool"}, LowerPool);

}  // namespace

void PoolKernel::Infer(InferContext& c) const {
  const auto& x = c.in_shape(0);
  if (x.size() != 4) c.Fail("input is not [batch, channels, height, width]");
  int64_t OH = win.OutH(x[2]), OW = win.OutW(x[3]);
  if (OH < 0 || OW < 0) c.Fail("the input is smaller than the (dilated) kernel");
  c.set_shape(out[0], {x[0], x[1], OH, OW});
}

void PoolKernel::Host(ExecContext& c) const {
  const auto& x = c.shape(in[0]);
  const auto& y = c.shape(out[0]);
  const int64_t planes = x[0] * x[1], H = x[2], W = x[3], OH = y[2], OW = y[3];
  const float* px = c.CF(in[0]);
  float* py = c.F(out[0]);
  // Tasks: runs of whole planes, about 2^19 window reads each (kernel.h, RowsPerTask).
  c.ParallelRows(planes, OH * OW * win.kh * win.kw,
                 [&](int64_t p0, int64_t p1) { Planes(px, py, p0, p1, H, W, OH, OW); });
}

void PoolKernel::Planes(const float* px, float* py, int64_t p0, int64_t p1, int64_t H, int64_t W, int64_t OH,
                        int64_t OW) const {
  for (int64_t pl = p0; pl < p1; pl++) {
    const float* xp = px + pl * H * W;
    float* yp = py + pl * OH * OW;
    for (int64_t oh = 0; oh < OH; oh++) {
      const int64_t h0 = oh * win.sh - win.pt;
      for (int64_t ow = 0; ow < OW; ow++) {
        const int64_t w0 = ow * win.sw - win.pl;
        if (max) {
          float m = -FLT_MAX;
          for (int64_t kh = 0; kh < win.kh; kh++) {
            const int64_t ih = h0 + kh * win.dh;
            if (ih < 0 || ih >= H) continue;
            for (int64_t kw = 0; kw < win.kw; kw++) {
              const int64_t iw = w0 + kw * win.dw;
              if (iw >= 0 && iw < W) m = std::max(m, xp[ih * W + iw]);
            }
          }
          yp[oh * OW + ow] = m;
        } else {
          // The window within the input.
          const int64_t hs = std::max<int64_t>(h0, 0), he = std::min(h0 + win.kh, H);
          const int64_t ws = std::max<int64_t>(w0, 0), we = std::min(w0 + win.kw, W);
          float sum = 0.0f;
          for (int64_t ih = hs; ih < he; ih++)
            for (int64_t iw = ws; iw < we; iw++) sum += xp[ih * W + iw];
          const int64_t count = include_pad ? win.kh * win.kw : std::max<int64_t>((he - hs) * (we - ws), 0);
          yp[oh * OW + ow] = count > 0 ? sum / static_cast<float>(count) : 0.0f;
        }
      }
    }
  }
}

void PoolKernel::Device(DeviceContext& c) const {
  const auto& x = c.shape(in[0]);
  const auto& y = c.shape(out[0]);
  devargs::Dims geo{{x[0] * x[1], x[2], x[3], y[2], y[3], max ? 1 : 0, include_pad ? 1 : 0, 0}};
  devargs::Dims k{{win.kh, win.kw, win.sh, win.sw, win.pt, win.pl, win.dh, win.dw}};
  long long n = NumElements(y);
  cu::CUdeviceptr px = c.ptr(in[0]), py = c.ptr(out[0]);
  c.Elementwise("onnxrl_pool", n, {&px, &py, &n, &geo, &k});
}

}  // namespace onnxrl_ep
