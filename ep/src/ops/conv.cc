// Conv: 2-D, NCHW, a constant weight and optional constant bias; strides, pads, dilations,
// groups (depthwise included); auto_pad NOTSET only. Also Window2d, which the pools share.
#include <algorithm>
#include <cstring>

#include "../lower_util.h"
#include "nn.h"
#include "ops.h"
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

// PatchRows unfolds rows [p0, p1) of one group of one image, x [Cg][H][W]: row p (output
// position p / OW, p % OW) gets the Cg*KH*KW inputs its window multiplies, in the weight's (c,
// kh, kw) order, 0 in the pads; rows are Cg*KH*KW floats apart. KW is the kernel's width when
// known at compile time (the common small ones, so that a row of the window is one or two
// vector moves), else 0.
template <int KW>
void PatchRows(const float* x, int64_t Cg, int64_t H, int64_t W, const Window2d& k, int64_t OW, int64_t p0,
               int64_t p1, float* rows) {
  const int64_t kw = KW > 0 ? KW : k.kw, K = Cg * k.kh * kw;
  int64_t oh = p0 / OW, ow = p0 % OW;
  for (int64_t p = p0; p < p1; p++) {
    float* row = rows + (p - p0) * K;
    const int64_t h0 = oh * k.sh - k.pt, w0 = ow * k.sw - k.pl;
    // inside: the window's columns are contiguous and within the input.
    const bool inside = k.dw == 1 && w0 >= 0 && w0 + kw <= W;
    for (int64_t c = 0; c < Cg; c++) {
      const float* xc = x + c * H * W;
      for (int64_t a = 0; a < k.kh; a++, row += kw) {
        const int64_t ih = h0 + a * k.dh;
        if (ih < 0 || ih >= H) {
          for (int64_t b = 0; b < kw; b++) row[b] = 0.0f;
          continue;
        }
        const float* src = xc + ih * W;
        if (inside) {
          std::memcpy(row, src + w0, kw * sizeof(float));  // KW > 0: one or two vector moves
          continue;
        }
        for (int64_t b = 0; b < kw; b++) {
          const int64_t iw = w0 + b * k.dw;
          row[b] = iw >= 0 && iw < W ? src[iw] : 0.0f;
        }
      }
    }
    if (++ow == OW) {
      ow = 0;
      oh++;
    }
  }
}

using PatchFn = void (*)(const float*, int64_t, int64_t, int64_t, const Window2d&, int64_t, int64_t, int64_t,
                         float*);

// PatchFor picks PatchRows' form for a kernel width.
PatchFn PatchFor(int64_t kw) {
  switch (kw) {
    case 1: return PatchRows<1>;
    case 2: return PatchRows<2>;
    case 3: return PatchRows<3>;
    case 4: return PatchRows<4>;
    case 5: return PatchRows<5>;
    case 7: return PatchRows<7>;
    case 8: return PatchRows<8>;
    default: return PatchRows<0>;
  }
}

}  // namespace

namespace {

// ConvTaskRows is TaskRows with tasks of at least 128 positions where that leaves as many
// threads busy: a task's tiles re-read its windows once per panel, so a longer one keeps them
// in L1/L2 for more of the multiply. A Nature CNN's layers on 256 images, alone, one thread
// (ep/bench/conv_gather.cc, tasks of 16 positions, as RowsPerTask gave the 4 x 4 and 3 x 3
// layers, and of 64 the 8 x 8, against 128): 47.7 -> 50.5, 49.9 -> 50.5 and 53.2 -> 53.4
// billion multiply-adds per second.
int64_t ConvTaskRows(int64_t macs, int64_t M) {
  const int64_t rows = TaskRows(macs, M, 8);
  if (rows >= 128 || M <= rows) return rows;
  int64_t tasks = std::max<int64_t>(2, (M + 127) / 128);  // as many threads busy as before: 2 or more
  if (tasks % 2 == 1) tasks++;
  return std::max(rows, ((M + tasks - 1) / tasks + 7) / 8 * 8);
}

}  // namespace

bool ConvKernel::Padded() const { return win.pt != 0 || win.pl != 0 || win.pb != 0 || win.pr != 0; }

void ConvKernel::Infer(InferContext& c) const {
  const auto& x = c.in_shape(0);
  if (x.size() != 4 || x[1] != C) c.Fail("input is not [batch, " + std::to_string(C) + ", height, width]");
  int64_t OH = win.OutH(x[2]), OW = win.OutW(x[3]);
  if (OH < 0 || OW < 0) c.Fail("the input is smaller than the dilated kernel");
  c.set_shape(out[0], {x[0], OC, OH, OW});
  // aux: where each (c, kh, kw) of a window is, from the window's first input (unpadded), or
  // from the start of its row of patches (padded).
  const int64_t Cg = C / group, H = x[2], W = x[3];
  auto& off = c.aux();
  off.resize(Cg * win.kh * win.kw);
  for (int64_t ch = 0, k = 0; ch < Cg; ch++)
    for (int64_t a = 0; a < win.kh; a++)
      for (int64_t b = 0; b < win.kw; b++, k++) off[k] = Padded() ? k : (ch * H + a * win.dh) * W + b * win.dw;
}

void ConvKernel::PrepareHost() {
  if (!packed.empty()) return;  // prepared already
  const int64_t Cg = C / group, OCg = OC / group, Kg = Cg * win.kh * win.kw;
  // W_g^T [Kg][OCg]: column o of group g is output channel g * OCg + o's weights.
  std::vector<float> wt(Kg * OCg);
  for (int64_t g = 0; g < group; g++) {
    for (int64_t o = 0; o < OCg; o++)
      for (int64_t k = 0; k < Kg; k++) wt[k * OCg + o] = w[(g * OCg + o) * Kg + k];
    packed.push_back(PackedWeights::Pack(wt.data(), Kg, OCg, OCg, bias.empty() ? nullptr : bias.data() + g * OCg));
  }
}

void ConvKernel::Host(ExecContext& c) const {
  if (packed.empty()) throw Error{"node " + node + ": the host executor did not prepare this step"};
  const auto& x = c.shape(in[0]);
  const auto& y = c.shape(out[0]);
  const int64_t N = x[0], H = x[2], W = x[3], OW = y[3], OHW = y[2] * OW;
  const int64_t Cg = C / group, OCg = OC / group, Kg = Cg * win.kh * win.kw;
  if (N == 0 || OHW == 0) return;
  const float* px = c.CF(in[0]);
  float* py = c.F(out[0]);
  const int64_t* off = c.aux().data();
  const bool padded = Padded();
  Epilogue e;
  e.act = act;
  e.a = a;
  e.b = b;
  // Tasks: runs of output positions of one group, counted across the batch's images (position
  // p of image n is row n * OHW + p), in whole tiles of 8 rows (TaskRows: a partial tile only
  // at the end of a task, never at each image's end) and about equal; one image spreads over
  // the threads too.
  const int64_t M = N * OHW;
  const int64_t rows = ConvTaskRows(Kg * OCg, M);
  const int64_t tasks = (M + rows - 1) / rows;
  const PatchFn patches = PatchFor(win.kw);
  auto task = [&](size_t t) {
    const int64_t g = static_cast<int64_t>(t) / tasks, q0 = static_cast<int64_t>(t) % tasks * rows;
    const int64_t m = std::min(M, q0 + rows) - q0;
    // This thread's buffers, grown only when needed: where each row's window starts and its
    // output goes, and (padded) the rows' patches [m][Kg].
    thread_local std::vector<const float*> starts;
    thread_local std::vector<float*> outs;
    thread_local std::vector<float> patch;
    if (starts.size() < static_cast<size_t>(m)) {
      starts.resize(m);
      outs.resize(m);
    }
    if (padded && patch.size() < static_cast<size_t>(m * Kg)) patch.resize(m * Kg);
    int64_t n = q0 / OHW, p = q0 % OHW;
    for (int64_t i = 0; i < m;) {
      // The rows of image n from position p: at most the rest of the image.
      const int64_t run = std::min(m - i, OHW - p);
      const float* xg = px + (n * C + g * Cg) * H * W;
      float* yg = py + (n * OC + g * OCg) * OHW;
      if (padded) patches(xg, Cg, H, W, win, OW, p, p + run, patch.data() + i * Kg);
      int64_t oh = p / OW, ow = p % OW;
      for (int64_t j = i; j < i + run; j++) {
        starts[j] = padded ? patch.data() + j * Kg : xg + oh * win.sh * W + ow * win.sw;
        outs[j] = yg + p + (j - i);
        if (++ow == OW) {
          ow = 0;
          oh++;
        }
      }
      i += run;
      n++;
      p = 0;
    }
    GemmGatherT(starts.data(), off, m, packed[g], e, outs.data(), OHW);
  };
  c.ParallelFor(static_cast<size_t>(group * tasks), task);
}

void ConvKernel::Device(DeviceContext& c) const {
  const auto& x = c.shape(in[0]);
  const auto& y = c.shape(out[0]);
  devargs::Dims geo{{x[0], C, x[2], x[3], OC, y[2], y[3], group}};
  devargs::Dims k{{win.kh, win.kw, win.sh, win.sw, win.pt, win.pl, win.dh, win.dw}};
  long long n = NumElements(y);
  cu::CUdeviceptr px = c.ptr(in[0]), pw = c.Resident(w), pb = c.Resident(bias), py = c.ptr(out[0]);
  c.Elementwise("onnxrl_conv", n, {&px, &pw, &pb, &py, &n, &geo, &k});
  if (act != kActNone) {
    int code = act;
    float pa = a, pb2 = b;
    c.Elementwise("onnxrl_unary", n, {&py, &py, &n, &code, &pa, &pb2});
  }
}

bool FuseIntoConv(Plan& p) {
  for (size_t i = 0; i < p.steps.size(); i++) {
    auto* conv = dynamic_cast<ConvKernel*>(p.steps[i].get());
    if (conv == nullptr || conv->act != kActNone || p.values[conv->out[0]].output >= 0) continue;
    size_t readers = 0, at = 0;
    for (size_t j = 0; j < p.steps.size(); j++)
      for (int v : p.steps[j]->in)
        if (v == conv->out[0]) {
          readers++;
          at = j;
        }
    if (readers != 1) continue;
    auto* u = dynamic_cast<UnaryKernel*>(p.steps[at].get());
    if (u == nullptr || (u->act != kActRelu && u->act != kActLeakyRelu && u->act != kActTanh &&
                         u->act != kActSigmoid && u->act != kActClip && u->act != kActGelu))
      continue;
    conv->act = u->act;
    conv->a = u->a;
    conv->b = u->b;
    conv->out = u->out;
    p.steps.erase(p.steps.begin() + at);
    return true;
  }
  return false;
}

}  // namespace onnxrl_ep
