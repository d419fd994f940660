// Conv: 2-D, NCHW, a constant weight and optional constant bias; strides, pads, dilations,
// groups (depthwise included); auto_pad NOTSET only. Also Window2d, which the pools share.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "../lower_util.h"
// The Winograd transforms below pass GCC vectors between always_inline helpers only (simd.h):
// the ABI note -Wpsabi gives for them does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
#include "../simd.h"
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

// Winograd F(2x2, 2x2) for a convolution whose kernel is twice its stride in both directions
// (no pads, no dilation, one group): a Nature CNN's 8x8/4 and 4x4/2 layers. Its input seen in
// blocks of stride x stride (space to depth) is Q = C * sh * sw channels, X[q][u][v] =
// x[c][sh u + a0][sw v + b0] for q = (c, a0, b0), and the convolution is a 2x2 one of stride 1
// over X, with weights W'[o][q][a1][b1] = w[o][c][sh a1 + a0][sw b1 + b0]. Each 2x2 tile of
// outputs is then 9 products of transformed 3x3 inputs by transformed weights, where the direct
// form makes 16 (1-D: y0 = d0 g0 + d1 g1 and y1 = d1 g0 + d2 g1 from m0 = (d0 - d1) g0,
// m1 = d1 (g0 + g1), m2 = (d2 - d1) g1 as y0 = m0 + m1, y1 = m1 + m2): 9/16 of the
// multiply-adds, as 9 matrix multiplies [tiles][Q] x [Q][OC] (the packed Gemm of gemm.h).
// A 3x3 kernel of stride 1 (X = x, Q = C) runs the same way as F(2x2, 3x3): 16 products of
// transformed 4x4 inputs per tile where the direct form makes 36 (a Nature CNN's 3x3/1 layer).
// The transforms only add and subtract (and halve, the weights', in double, once), so the
// outputs differ from the direct form's by rounding, no more than its own (ops_test: 1.7e-5
// against 2.3e-5 of 30, for the 4x4/2 layer's sums of 512 products).
namespace {

constexpr int64_t kWinoPad = 16;  // Q and OC are padded to whole 16-float vectors in the buffers
// Tiles per multiply, at least (a Nature CNN's first layer on 16 images, alone: 40 tiles
// 777-787 us, 64 797-799, 80 794-808).
constexpr int64_t kWinoTiles = 40;

int64_t WinoRound(int64_t n) { return (n + kWinoPad - 1) / kWinoPad * kWinoPad; }

// WinoGeometry is what a Winograd convolution's loops need of one signature.
struct WinoGeometry {
  int64_t C, H, W, OC, OH, OW, sh, sw;
  int64_t Q, Qp, OCp;   // space-to-depth channels, and both padded to 16
  int64_t XH, XW;       // X's rows and columns within the input: floor(H / sh), floor(W / sw)
  int64_t TI, TJ;       // tiles per column and per row: ceil(OH / 2), ceil(OW / 2)
  int64_t XC;           // the columns of X one row of tiles reads: 2 TJ + NT - 1
  int64_t NT;           // a tile's inputs per side: 3 (F(2x2, 2x2)) or 4 (F(2x2, 3x3))
};

// WinoBt is B^T d, the input transform of one side of a tile; WinoAt is A^T m, the output's.
template <int NT, typename V>
ONNXRL_ALWAYS_INLINE void WinoBt(const V (&d)[NT], V (&e)[NT]) {
  if constexpr (NT == 3) {
    e[0] = d[0] - d[1];
    e[1] = d[1];
    e[2] = d[2] - d[1];
  } else {
    e[0] = d[0] - d[2];
    e[1] = d[1] + d[2];
    e[2] = d[2] - d[1];
    e[3] = d[1] - d[3];
  }
}
template <int NT, typename V>
ONNXRL_ALWAYS_INLINE void WinoAt(const V (&m)[NT], V (&y)[2]) {
  if constexpr (NT == 3) {
    y[0] = m[0] + m[1];
    y[1] = m[1] + m[2];
  } else {
    y[0] = m[0] + m[1] + m[2];
    y[1] = m[1] - m[2] - m[3];
  }
}

// WinoFill writes row u of X (one image's x, [C][H][W]) as xr[v][Qp], zeros past the input
// (rows, columns); the padding of q is left as it is (the multiplies never read it).
template <int SW>
void WinoFill(const float* x, const WinoGeometry& g, int64_t u, float* xr) {
  const int64_t sw = SW > 0 ? SW : g.sw, Qp = g.Qp;
  if (u >= g.XH) {
    std::memset(xr, 0, g.XC * Qp * sizeof(float));
    return;
  }
  // Float copies rather than memcpy, which may alias g: its fields would be read again per copy.
  const int64_t vs = std::min(g.XC, g.XW), C = g.C, sh = g.sh, H = g.H, W = g.W;
  for (int64_t c = 0; c < C; c++)
    for (int64_t a0 = 0; a0 < sh; a0++) {
      const float* src = x + (c * H + sh * u + a0) * W;
      float* dst = xr + (c * sh + a0) * sw;
      for (int64_t v = 0; v < vs; v++)
        for (int64_t b = 0; b < sw; b++) dst[v * Qp + b] = src[v * sw + b];
    }
  for (int64_t v = vs; v < g.XC; v++) std::memset(xr + v * Qp, 0, Qp * sizeof(float));
}

using WinoFillFn = void (*)(const float*, const WinoGeometry&, int64_t, float*);

WinoFillFn WinoFillFor(int64_t sw) {
  switch (sw) {
    case 1: return WinoFill<1>;
    case 2: return WinoFill<2>;
    case 4: return WinoFill<4>;
    default: return WinoFill<0>;
  }
}

// WinoInput transforms the TJ tiles of one row of tiles (X's NT rows xr, WinoFill) into
// V[kl][t][Qp] (rows T apart per kl, from tile t0): B^T d B, d the tile's NT x NT inputs, per q.
template <typename V, int NT>
ONNXRL_ALWAYS_INLINE void WinoInput(const float* const* xr, const WinoGeometry& g, float* Vb, int64_t T, int64_t t0) {
  constexpr int L = simd::Lanes<V>;
  const int64_t kl = T * g.Qp;
  for (int64_t j = 0; j < g.TJ; j++) {
    const int64_t at = 2 * j * g.Qp;
    float* out = Vb + (t0 + j) * g.Qp;
    for (int64_t q = 0; q < g.Qp; q += L) {
      V e[NT][NT];
#pragma GCC unroll 4
      for (int t = 0; t < NT; t++) {
        V d[NT], f[NT];
#pragma GCC unroll 4
        for (int r = 0; r < NT; r++) d[r] = simd::Load<V>(xr[r] + at + t * g.Qp + q);
        WinoBt<NT>(d, f);
#pragma GCC unroll 4
        for (int k = 0; k < NT; k++) e[k][t] = f[k];
      }
#pragma GCC unroll 4
      for (int k = 0; k < NT; k++) {
        V f[NT];
        WinoBt<NT>(e[k], f);
#pragma GCC unroll 4
        for (int l = 0; l < NT; l++) simd::Store<V>(out + (NT * k + l) * kl + q, f[l]);
      }
    }
  }
}

// WinoTile is A^T m A for tile t of the products M[kl][t][OCp] (kl rows T * OCp apart), channels
// [oc, oc + lanes), with activation A (e's): o[2a + b] is the output at (2i + a, 2j + b).
template <typename V, int A, int NT>
ONNXRL_ALWAYS_INLINE void WinoTile(const float* m0, int64_t kl, const Epilogue& e, V* o) {
  V z[2][NT];
#pragma GCC unroll 4
  for (int l = 0; l < NT; l++) {
    V m[NT], y[2];
#pragma GCC unroll 4
    for (int k = 0; k < NT; k++) m[k] = simd::Load<V>(m0 + (NT * k + l) * kl);
    WinoAt<NT>(m, y);
    z[0][l] = y[0];
    z[1][l] = y[1];
  }
#pragma GCC unroll 2
  for (int a = 0; a < 2; a++) {
    V y[2];
    WinoAt<NT>(z[a], y);
    o[2 * a] = y[0];
    o[2 * a + 1] = y[1];
  }
  simd::Activate<A>(o, 4, e);
}

// WinoOutput turns the products M[kl][t][OCp] of T tiles (the bias already in the middle one's)
// into outputs, applies e's activation (A, or e.act for simd::kAnyAct) and stores them NCHW;
// tile t0 + j is tile (i, j) of image y's row of tiles i, for j < TJ. On AVX-512, 4 whole tiles
// of 16 channels are stored as one 8-float store per channel and output row
// (simd::StoreTransposed8x16, the multiply's transposed store); other tiles (and other
// instruction sets) a float at a time.
template <typename V, int A, int NT>
ONNXRL_ALWAYS_INLINE void WinoOutput(const float* Mb, const WinoGeometry& g, int64_t T, int64_t t0, const Epilogue& e,
                                     float* y, int64_t i) {
  constexpr int L = simd::Lanes<V>;
  const int64_t kl = T * g.OCp, plane = g.OH * g.OW;
  const int64_t oh = 2 * i, rows = std::min<int64_t>(2, g.OH - oh);
  for (int64_t oc = 0; oc < g.OC; oc += L) {
    const int64_t n = std::min<int64_t>(L, g.OC - oc);
    float* yo = y + oc * plane + oh * g.OW;
    int64_t j = 0;
    if constexpr (std::is_same_v<V, simd::V16>) {
      if (n == L && rows == 2) {
        for (; 2 * (j + 4) <= g.OW; j += 4) {
          V o[4][4];
#pragma GCC unroll 4
          for (int t = 0; t < 4; t++) WinoTile<V, A, NT>(Mb + (t0 + j + t) * g.OCp + oc, kl, e, o[t]);
#pragma GCC unroll 2
          for (int a = 0; a < 2; a++) {
            V r[8];
#pragma GCC unroll 8
            for (int p = 0; p < 8; p++) r[p] = o[p / 2][2 * a + p % 2];
            simd::StoreTransposed8x16(r, 1, yo + a * g.OW + 2 * j, plane);
          }
        }
      }
    }
    for (; j < g.TJ; j++) {
      V o[4];
      WinoTile<V, A, NT>(Mb + (t0 + j) * g.OCp + oc, kl, e, o);
      alignas(64) float t[4][L];
#pragma GCC unroll 4
      for (int k = 0; k < 4; k++) simd::Store<V>(t[k], o[k]);
      const int64_t ow = 2 * j, cols = std::min<int64_t>(2, g.OW - ow);
      for (int64_t c = 0; c < n; c++)
        for (int64_t a = 0; a < rows; a++)
          for (int64_t b = 0; b < cols; b++) yo[c * plane + a * g.OW + ow + b] = t[2 * a + b][c];
    }
  }
}

using WinoOutputFn = void (*)(const float*, const WinoGeometry&, int64_t, int64_t, const Epilogue&, float*, int64_t);

// WinoTransforms are the input and output transforms compiled for one instruction set, the
// output's per activation that policies fuse (none, ReLU, Tanh; any other through a switch).
struct WinoTransforms {
  void (*input)(const float* const*, const WinoGeometry&, float*, int64_t, int64_t);
  WinoOutputFn output[4];
  WinoOutputFn Output(int32_t act) const {
    return output[act == kActNone ? 0 : act == kActRelu ? 1 : act == kActTanh ? 2 : 3];
  }
};

template <int NT>
void WinoInputPortable(const float* const* xr, const WinoGeometry& g, float* Vb, int64_t T, int64_t t0) {
  WinoInput<simd::V4, NT>(xr, g, Vb, T, t0);
}
template <int NT, int A>
void WinoOutputPortable(const float* Mb, const WinoGeometry& g, int64_t T, int64_t t0, const Epilogue& e, float* y,
                        int64_t i) {
  WinoOutput<simd::V4, A, NT>(Mb, g, T, t0, e, y, i);
}
#if defined(ONNXRL_X86_ISAS)
template <int NT>
ONNXRL_TARGET_AVX2 void WinoInputAvx2(const float* const* xr, const WinoGeometry& g, float* Vb, int64_t T, int64_t t0) {
  WinoInput<simd::V8, NT>(xr, g, Vb, T, t0);
}
template <int NT, int A>
ONNXRL_TARGET_AVX2 void WinoOutputAvx2(const float* Mb, const WinoGeometry& g, int64_t T, int64_t t0,
                                       const Epilogue& e, float* y, int64_t i) {
  WinoOutput<simd::V8, A, NT>(Mb, g, T, t0, e, y, i);
}
template <int NT>
ONNXRL_TARGET_AVX512 void WinoInputAvx512(const float* const* xr, const WinoGeometry& g, float* Vb, int64_t T,
                                          int64_t t0) {
  WinoInput<simd::V16, NT>(xr, g, Vb, T, t0);
}
template <int NT, int A>
ONNXRL_TARGET_AVX512 void WinoOutputAvx512(const float* Mb, const WinoGeometry& g, int64_t T, int64_t t0,
                                           const Epilogue& e, float* y, int64_t i) {
  WinoOutput<simd::V16, A, NT>(Mb, g, T, t0, e, y, i);
}
#endif

template <int NT>
WinoTransforms ChosenWinoTransforms() {
  switch (ChosenIsa()) {
#if defined(ONNXRL_X86_ISAS)
    case IsaLevel::kAvx512:
      return {WinoInputAvx512<NT>, {WinoOutputAvx512<NT, kActNone>, WinoOutputAvx512<NT, kActRelu>,
                                    WinoOutputAvx512<NT, kActTanh>, WinoOutputAvx512<NT, simd::kAnyAct>}};
    case IsaLevel::kAvx2:
      return {WinoInputAvx2<NT>, {WinoOutputAvx2<NT, kActNone>, WinoOutputAvx2<NT, kActRelu>,
                                  WinoOutputAvx2<NT, kActTanh>, WinoOutputAvx2<NT, simd::kAnyAct>}};
#endif
    default:
      return {WinoInputPortable<NT>, {WinoOutputPortable<NT, kActNone>, WinoOutputPortable<NT, kActRelu>,
                                      WinoOutputPortable<NT, kActTanh>, WinoOutputPortable<NT, simd::kAnyAct>}};
  }
}

}  // namespace

namespace {

// WinoTileSize is a tile's inputs per side where a convolution runs as Winograd (above), else 0:
// 3 (F(2x2, 2x2)) for a kernel twice its stride, 4 (F(2x2, 3x3)) for a 3x3 kernel of stride 1;
// one group, no pads or dilation, and enough channels that the transforms, which cost about
// 1/Q of the multiplies, pay.
int WinoTileSize(const ConvKernel& k) {
  const Window2d& w = k.win;
  if (k.group != 1 || k.Padded() || w.dh != 1 || w.dw != 1 || k.C * w.sh * w.sw < 32 || k.OC < 16) return 0;
  if (w.kh == 2 * w.sh && w.kw == 2 * w.sw) return 3;
  if (w.kh == 3 && w.kw == 3 && w.sh == 1 && w.sw == 1) return 4;
  return 0;
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


namespace {

// PrefetchL2 asks for p's line in L2. Inline assembly on x86-64: GCC deletes a loop whose only
// effect is __builtin_prefetch (it counts as none), as it did WinoPrefetch's.
inline void PrefetchL2(const char* p) {
#if defined(__x86_64__)
  asm volatile("prefetcht1 %0" : : "m"(*p));
#else
  __builtin_prefetch(p, 0, 2);
#endif
}

// WinoPrefetch prefetches the inputs and the outputs of the rows of tiles [u0, u1) into L2.
void WinoPrefetch(const float* px, float* py, const WinoGeometry& g, int64_t u0, int64_t u1) {
  const int64_t image = g.C * g.H * g.W, plane = g.OH * g.OW;
  for (int64_t u = u0; u < u1;) {
    // The rows of image n from tile row i up to the chunk's end or the image's.
    const int64_t n = u / g.TI, i0 = u % g.TI, i1 = std::min(g.TI, i0 + (u1 - u));
    u += i1 - i0;
    const int64_t r0 = 2 * i0 * g.sh, r1 = std::min(g.H, (2 * i1 + g.NT - 2) * g.sh);
    for (int64_t c = 0; c < g.C; c++) {
      const char* a = reinterpret_cast<const char*>(px + n * image + (c * g.H + r0) * g.W);
      const char* e = reinterpret_cast<const char*>(px + n * image + (c * g.H + r1) * g.W);
      for (; a < e; a += 64) PrefetchL2(a);
    }
    const int64_t o0 = 2 * i0, o1 = std::min(g.OH, 2 * i1);
    for (int64_t oc = 0; oc < g.OC; oc++) {
      const char* a = reinterpret_cast<const char*>(py + (n * g.OC + oc) * plane + o0 * g.OW);
      const char* e = reinterpret_cast<const char*>(py + (n * g.OC + oc) * plane + o1 * g.OW);
      for (; a < e; a += 64) PrefetchL2(a);
    }
  }
}

// WinogradHost runs a convolution that WinoTileSize accepts. Tasks take runs of rows of tiles
// (image n's tile row i is unit n * TI + i, counted across the batch's images) of at least about
// 2^19 multiply-adds, an even number of them; a task transforms the inputs of up to 64 tiles
// (whole rows of tiles) into its buffers, multiplies them by the NT^2 packed transformed weights,
// and transforms the products into outputs, so that the transformed values stay in L1/L2.
void WinogradHost(const ConvKernel& k, ExecContext& c) {
  const auto& x = c.shape(k.in[0]);
  const auto& y = c.shape(k.out[0]);
  WinoGeometry g;
  g.C = k.C;
  g.H = x[2];
  g.W = x[3];
  g.OC = k.OC;
  g.OH = y[2];
  g.OW = y[3];
  g.sh = k.win.sh;
  g.sw = k.win.sw;
  g.Q = g.C * g.sh * g.sw;
  g.Qp = WinoRound(g.Q);
  g.OCp = WinoRound(g.OC);
  g.XH = g.H / g.sh;
  g.XW = g.W / g.sw;
  g.TI = (g.OH + 1) / 2;
  g.TJ = (g.OW + 1) / 2;
  g.NT = WinoTileSize(k);
  g.XC = 2 * g.TJ + g.NT - 1;
  const int64_t N = x[0];
  if (N == 0 || g.OH <= 0 || g.OW <= 0) return;
  const float* px = c.CF(k.in[0]);
  float* py = c.F(k.out[0]);
  Epilogue e;
  e.act = k.act;
  e.a = k.a;
  e.b = k.b;
  const Epilogue none;
  const int64_t units = N * g.TI, cost = g.TJ * g.NT * g.NT * g.Q * g.OC;
  int64_t per = std::max<int64_t>(1, ((int64_t{1} << 19) + cost - 1) / cost);
  int64_t tasks = (units + per - 1) / per;
  if (tasks > 1 && tasks % 2 == 1) tasks++;
  per = (units + tasks - 1) / tasks;
  tasks = (units + per - 1) / per;
  // Rows of tiles per multiply: whole tiles of 8 rows (multiply-adds) of about kWinoTiles.
  int64_t chunk = 1;
  while (chunk * g.TJ < kWinoTiles || chunk * g.TJ % 8 != 0) chunk++;
  if (chunk * g.TJ > 2 * kWinoTiles) chunk = std::max<int64_t>(1, kWinoTiles / g.TJ);
  static const WinoTransforms tf3 = ChosenWinoTransforms<3>(), tf4 = ChosenWinoTransforms<4>();
  const WinoTransforms& tf = g.NT == 3 ? tf3 : tf4;
  const int64_t NT = g.NT, NT2 = NT * NT;
  const WinoFillFn fill = WinoFillFor(g.sw);
  const WinoOutputFn out = tf.Output(e.act);
  const int64_t image = g.C * g.H * g.W, plane = g.OH * g.OW;
  auto task = [&](size_t t) {
    const int64_t u0 = static_cast<int64_t>(t) * per, u1 = std::min(units, u0 + per);
    const int64_t T = std::min(chunk, u1 - u0) * g.TJ;
    // This thread's buffers, grown only when needed: X's NT rows, the transformed inputs
    // V[NT^2][T][Qp] and the products M[NT^2][T][OCp].
    thread_local std::vector<float> X, Vb, Mb;
    if (X.size() < static_cast<size_t>(NT * g.XC * g.Qp)) X.resize(NT * g.XC * g.Qp);
    if (Vb.size() < static_cast<size_t>(NT2 * T * g.Qp)) Vb.resize(NT2 * T * g.Qp);
    if (Mb.size() < static_cast<size_t>(NT2 * T * g.OCp)) Mb.resize(NT2 * T * g.OCp);
    float* xr[4];
    for (int64_t r = 0; r < NT; r++) xr[r] = X.data() + r * g.XC * g.Qp;
    int64_t xn = -1, xu = -1;  // the image and first row of X in xr
    for (int64_t c0 = u0; c0 < u1; c0 += chunk) {
      const int64_t c1 = std::min(u1, c0 + chunk), Tc = (c1 - c0) * g.TJ;
      for (int64_t u = c0; u < c1; u++) {
        const int64_t n = u / g.TI, i = u % g.TI;
        if (n == xn && 2 * i == xu + 2) {  // X's last NT - 2 rows are this row of tiles' first
          float* const first[2] = {xr[0], xr[1]};
          for (int64_t r = 0; r + 2 < NT; r++) xr[r] = xr[r + 2];
          for (int64_t r = NT - 2; r < NT; r++) {
            xr[r] = first[r - (NT - 2)];
            fill(px + n * image, g, 2 * i + r, xr[r]);
          }
        } else {
          for (int64_t r = 0; r < NT; r++) fill(px + n * image, g, 2 * i + r, xr[r]);
        }
        xn = n;
        xu = 2 * i;
        tf.input(xr, g, Vb.data(), Tc, (u - c0) * g.TJ);
      }
      // The next rows of tiles' inputs (to L2) and outputs (to be written), while this chunk's
      // multiplies run: read in one pass from memory, a large batch's are not in any cache.
      WinoPrefetch(px, py, g, c1, std::min(units, c1 + chunk));
      for (int64_t kl = 0; kl < NT2; kl++)
        Gemm(Vb.data() + kl * Tc * g.Qp, g.Qp, Tc, k.packed[kl], 0, g.OC, none, Mb.data() + kl * Tc * g.OCp, g.OCp);
      for (int64_t u = c0; u < c1; u++)
        out(Mb.data(), g, Tc, (u - c0) * g.TJ, e, py + u / g.TI * g.OC * plane, u % g.TI);
    }
  };
  c.ParallelFor(static_cast<size_t>(tasks), task);
}

// PackWinograd packs the NT^2 transformed weights G W' G^T, [Q][OC] each (q = (c, a0, b0)), the
// bias with the one (1, 1) (every output adds its product once).
std::vector<PackedWeights> PackWinograd(const ConvKernel& k) {
  const int64_t sh = k.win.sh, sw = k.win.sw, kh = k.win.kh, kw = k.win.kw, C = k.C, OC = k.OC;
  const int64_t Q = C * sh * sw;
  const int NT = WinoTileSize(k), R = NT - 1;  // R: the kernel's side in blocks
  static const double G3[3][3] = {{1, 0, 0}, {1, 1, 0}, {0, 1, 0}};
  static const double G4[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  const double(*G)[3] = NT == 3 ? G3 : G4;
  std::vector<PackedWeights> out;
  std::vector<float> wt(Q * OC);
  for (int kr = 0; kr < NT; kr++)
    for (int kc = 0; kc < NT; kc++) {
      for (int64_t c = 0; c < C; c++)
        for (int64_t a0 = 0; a0 < sh; a0++)
          for (int64_t b0 = 0; b0 < sw; b0++) {
            const int64_t q = (c * sh + a0) * sw + b0;
            for (int64_t o = 0; o < OC; o++) {
              double sum = 0;
              for (int a1 = 0; a1 < R; a1++)
                for (int b1 = 0; b1 < R; b1++)
                  sum += G[kr][a1] * G[kc][b1] * k.w[((o * C + c) * kh + sh * a1 + a0) * kw + sw * b1 + b0];
              wt[q * OC + o] = static_cast<float>(sum);
            }
          }
      const bool bias = kr == 1 && kc == 1 && !k.bias.empty();
      out.push_back(PackedWeights::Pack(wt.data(), Q, OC, OC, bias ? k.bias.data() : nullptr));
    }
  return out;
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
  if (WinoTileSize(*this) != 0) {
    packed = PackWinograd(*this);
    return;
  }
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
  if (WinoTileSize(*this) != 0) return WinogradHost(*this, c);
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
