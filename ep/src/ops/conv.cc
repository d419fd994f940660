// Conv: 2-D, NCHW, a constant weight and optional constant bias; strides, pads, dilations,
// groups (depthwise included); auto_pad NOTSET only. Also Window2d, which the pools share.
#include <algorithm>
#include <cstring>

#include "../lower_util.h"
#include "nn.h"
#include "../cuda/device_args.h"
#include "../cuda/device_context.h"

namespace onnxrl_ep {

int64_t Window2d::Out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1) const {
  int64_t span = in + p0 + p1 - d * (k - 1) - 1;  // the last window's start, at most
  if (span < 0) return -1;
  if (!ceil) return span / s + 1;
  int64_t out = (span + s - 1) / s + 1;
  // As the runtime does: the last window must start inside the input or its leading pad.
  if ((out - 1) * s >= in + p0) out--;
  return out;
}

// ReadWindow reads the window attributes Conv and the pools share: kernel (kernel_shape, or
// the weight's for Conv when absent), strides, dilations, pads; auto_pad must be NOTSET.
Window2d ReadWindow(const OrtNode* n, int64_t kh, int64_t kw) {
  std::string auto_pad = AttrString(n, "auto_pad", "NOTSET");
  if (auto_pad != "NOTSET") Unsupported("auto_pad " + auto_pad + " (only NOTSET, explicit pads)");
  Window2d w;
  if (auto k = AttrInts(n, "kernel_shape")) {
    if (k->size() != 2) Unsupported("a kernel_shape that is not 2-D");
    kh = (*k)[0];
    kw = (*k)[1];
  }
  if (kh <= 0 || kw <= 0) Unsupported("no 2-D kernel_shape");
  w.kh = kh;
  w.kw = kw;
  if (auto s = AttrInts(n, "strides")) {
    if (s->size() != 2 || (*s)[0] <= 0 || (*s)[1] <= 0) Unsupported("strides that are not two positive numbers");
    w.sh = (*s)[0];
    w.sw = (*s)[1];
  }
  if (auto d = AttrInts(n, "dilations")) {
    if (d->size() != 2 || (*d)[0] <= 0 || (*d)[1] <= 0) Unsupported("dilations that are not two positive numbers");
    w.dh = (*d)[0];
    w.dw = (*d)[1];
  }
  if (auto p = AttrInts(n, "pads")) {
    if (p->size() != 4) Unsupported("pads that are not four numbers");
    for (int64_t v : *p)
      if (v < 0) Unsupported("negative pads");
    w.pt = (*p)[0];
    w.pl = (*p)[1];
    w.pb = (*p)[2];
    w.pr = (*p)[3];
  }
  return w;
}

namespace {

void LowerConv(const OrtNode* n, Plan& p) {
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  if (ins.size() < 2) Unsupported("Conv without a weight");
  auto sh = Shape(ins[0]);
  if (!sh || sh->size() != 4) Unsupported("Conv input that is not 4-D (only 2-D NCHW convolutions)");
  ConstTensor w = Param(ins[1], "weight");
  if (w.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || w.shape.size() != 4) Unsupported("the weight is not a 4-D float32 tensor");
  auto s = std::make_unique<ConvKernel>();
  s->node = NodeName(n);
  s->group = AttrInt(n, "group", 1);
  s->OC = w.shape[0];
  if (s->group <= 0 || s->OC % s->group != 0) Unsupported("group does not divide the output channels");
  s->C = w.shape[1] * s->group;
  s->win = ReadWindow(n, w.shape[2], w.shape[3]);
  if (s->win.kh != w.shape[2] || s->win.kw != w.shape[3]) Unsupported("kernel_shape differs from the weight's");
  if (s->OC == 0 || s->C == 0) Unsupported("a weight without channels");
  s->w = std::move(w.f);
  if (Present(ins, 2)) {
    ConstTensor b = Param(ins[2], "bias");
    if (b.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || b.size() != s->OC) Unsupported("the bias is not [OC] float32");
    s->bias = std::move(b.f);
  }
  s->in = {In(p, ins[0])};
  s->out = {Out(p, outs.at(0))};
  p.steps.push_back(std::move(s));
}

const OpRegistrar kRegistrar({"Conv"}, LowerConv);

// Im2Col unfolds one group of one image, x [Cg][H][W], into col [Cg*KH*KW][OH*OW]: row
// (c, kh, kw) holds the input each output position multiplies with that weight (0 in the pads).
void Im2Col(const float* x, int64_t Cg, int64_t H, int64_t W, const Window2d& k, int64_t OH, int64_t OW, float* col) {
  for (int64_t c = 0; c < Cg; c++) {
    const float* xc = x + c * H * W;
    for (int64_t kh = 0; kh < k.kh; kh++) {
      for (int64_t kw = 0; kw < k.kw; kw++) {
        float* row = col + ((c * k.kh + kh) * k.kw + kw) * OH * OW;
        const int64_t dx = kw * k.dw - k.pl;
        for (int64_t oh = 0; oh < OH; oh++) {
          float* dst = row + oh * OW;
          const int64_t ih = oh * k.sh - k.pt + kh * k.dh;
          if (ih < 0 || ih >= H) {
            std::memset(dst, 0, OW * sizeof(float));
            continue;
          }
          const float* src = xc + ih * W;
          if (k.sw == 1 && dx >= 0 && dx + OW <= W) {
            std::memcpy(dst, src + dx, OW * sizeof(float));
            continue;
          }
          for (int64_t ow = 0; ow < OW; ow++) {
            const int64_t iw = ow * k.sw + dx;
            dst[ow] = iw >= 0 && iw < W ? src[iw] : 0.0f;
          }
        }
      }
    }
  }
}

}  // namespace

bool ConvKernel::Pointwise() const {
  return win.kh == 1 && win.kw == 1 && win.sh == 1 && win.sw == 1 && win.pt == 0 && win.pl == 0 && win.pb == 0 &&
         win.pr == 0;
}

void ConvKernel::Infer(InferContext& c) const {
  const auto& x = c.in_shape(0);
  if (x.size() != 4 || x[1] != C) c.Fail("input is not [batch, " + std::to_string(C) + ", height, width]");
  int64_t OH = win.OutH(x[2]), OW = win.OutW(x[3]);
  if (OH < 0 || OW < 0) c.Fail("the input is smaller than the dilated kernel");
  c.set_shape(out[0], {x[0], OC, OH, OW});
  if (!Pointwise()) c.scratch = std::max(c.scratch, (C / group) * win.kh * win.kw * OH * OW);
}

void ConvKernel::Host(ExecContext& c) const {
  const auto& x = c.shape(in[0]);
  const auto& y = c.shape(out[0]);
  const int64_t N = x[0], H = x[2], W = x[3], OH = y[2], OW = y[3], OHW = OH * OW;
  const int64_t Cg = C / group, OCg = OC / group, Kg = Cg * win.kh * win.kw;
  const float* px = c.CF(in[0]);
  float* py = c.F(out[0]);
  float* col = c.scratch();
  const bool pointwise = Pointwise();
  if (OHW == 0) return;
  for (int64_t n = 0; n < N; n++) {
    for (int64_t g = 0; g < group; g++) {
      const float* xg = px + (n * C + g * Cg) * H * W;
      float* yg = py + (n * OC + g * OCg) * OHW;
      if (!pointwise) Im2Col(xg, Cg, H, W, win, OH, OW, col);
      // yg [OCg][OHW] = Wg [OCg][Kg] @ col [Kg][OHW].
      HostDense(w.data() + g * OCg * Kg, OCg, Kg, pointwise ? xg : col, OHW, nullptr, kActNone, 0, 0, yg);
      if (!bias.empty()) {
        for (int64_t o = 0; o < OCg; o++) {
          const float b = bias[g * OCg + o];
          float* row = yg + o * OHW;
          for (int64_t i = 0; i < OHW; i++) row[i] += b;
        }
      }
    }
  }
}

void ConvKernel::Device(DeviceContext& c) const {
  const auto& x = c.shape(in[0]);
  const auto& y = c.shape(out[0]);
  devargs::Dims geo{{x[0], C, x[2], x[3], OC, y[2], y[3], group}};
  devargs::Dims k{{win.kh, win.kw, win.sh, win.sw, win.pt, win.pl, win.dh, win.dw}};
  long long n = NumElements(y);
  cu::CUdeviceptr px = c.ptr(in[0]), pw = c.Resident(w), pb = c.Resident(bias), py = c.ptr(out[0]);
  c.Elementwise("onnxrl_conv", n, {&px, &pw, &pb, &py, &n, &geo, &k});
}

}  // namespace onnxrl_ep
