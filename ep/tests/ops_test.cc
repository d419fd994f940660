// The op registry and hand-built plans, without the runtime: every op type ep/README.md claims
// has a lowering (and nothing unclaimed is registered); Fuse folds a bias Add and an activation
// into a Dense; InferRun resolves shapes and per-step data that the kernels' host loops then use.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ops/nn.h"
#include "ops/ops.h"
#include "plan.h"

namespace onnxrl_ep {
// Set by provider.cc in the library; nothing here calls the runtime.
const OrtApi* g_ort = nullptr;
const OrtEpApi* g_ep = nullptr;
}  // namespace onnxrl_ep

using namespace onnxrl_ep;

static int failures = 0;

static void Expect(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAIL %s\n", what.c_str());
    failures++;
  }
}

// ClaimedOps reads the op types of the README's "What it claims": the paragraph after the one
// that ends with a colon, parenthesized remarks dropped, names separated by commas and "and".
static std::set<std::string> ClaimedOps(const char* readme) {
  std::ifstream f(readme);
  std::vector<std::string> paras;
  std::string line, para;
  bool in = false;
  while (std::getline(f, line)) {
    if (line.rfind("## ", 0) == 0) {
      if (in) break;
      in = line == "## What it claims";
      continue;
    }
    if (!in) continue;
    if (line.empty()) {
      if (!para.empty()) paras.push_back(para);
      para.clear();
    } else {
      para += (para.empty() ? "" : " ") + line;
    }
  }
  if (!para.empty()) paras.push_back(para);
  std::set<std::string> ops;
  for (size_t i = 0; i + 1 < paras.size(); i++) {
    if (paras[i].back() != ':') continue;
    std::string text;
    int depth = 0;
    for (char ch : paras[i + 1]) {
      if (ch == '(') depth++;
      if (depth == 0) text += ch == '.' ? ',' : ch;
      if (ch == ')') depth--;
    }
    for (size_t at; (at = text.find(" and ")) != std::string::npos;) text.replace(at, 5, ",");
    std::stringstream ss(text);
    for (std::string tok; std::getline(ss, tok, ',');) {
      tok.erase(0, tok.find_first_not_of(' '));
      tok.erase(tok.find_last_not_of(' ') + 1);
      bool name = !tok.empty() && std::isupper(static_cast<unsigned char>(tok[0]));
      for (char ch : tok) name = name && std::isalpha(static_cast<unsigned char>(ch));
      if (name) ops.insert(tok);
    }
    break;
  }
  return ops;
}

static void TestRegistry(const char* readme) {
  std::set<std::string> claimed = ClaimedOps(readme);
  Expect(claimed.size() >= 30, "README lists " + std::to_string(claimed.size()) + " op types, want at least 30");
  for (const std::string& op : claimed) Expect(FindLowering(op) != nullptr, op + " is claimed but has no lowering");
  std::vector<std::string> reg = RegisteredOps();
  Expect(std::is_sorted(reg.begin(), reg.end()), "RegisteredOps is not sorted");
  for (const std::string& op : reg) Expect(claimed.count(op) == 1, op + " has a lowering but is not in the README");
  Expect(FindLowering("Sin") == nullptr, "Sin has a lowering");
}

static std::vector<float> Rand(size_t n, std::mt19937& g) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

static int Const(Plan& p, const std::string& name, std::vector<int64_t> shape, std::vector<float> data) {
  int id = p.Id(name);
  p.values[id].is_const = true;
  p.values[id].c.type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  p.values[id].c.shape = std::move(shape);
  p.values[id].c.f = std::move(data);
  return id;
}

template <class K>
static K& Add(Plan& p, const std::string& node, std::vector<int> in, std::vector<int> out) {
  auto k = std::make_unique<K>();
  k->node = node;
  k->in = std::move(in);
  k->out = std::move(out);
  K& ref = *k;
  p.steps.push_back(std::move(k));
  return ref;
}

// Host plans run for the given input shapes and buffers, prepared as the host executor
// prepares them (Kernel::PrepareHost); the outputs' buffers are returned.
static std::vector<std::vector<float>> HostRun(Plan& p, const std::vector<std::vector<int64_t>>& shapes,
                                               std::vector<std::vector<float>>& inputs, Run& r) {
  for (auto& step : p.steps) step->PrepareHost();
  r.shapes.assign(p.values.size(), {});
  for (size_t i = 0; i < p.inputs.size(); i++) r.shapes[p.inputs[i]] = shapes[i];
  InferRun(p, r);
  for (size_t i = 0; i < p.inputs.size(); i++) r.ptr[p.inputs[i]] = inputs[i].data();
  std::vector<std::vector<float>> outs(p.outputs.size());
  for (size_t i = 0; i < p.outputs.size(); i++) {
    outs[i].resize(NumElements(r.shapes[p.outputs[i]]));
    r.ptr[p.outputs[i]] = outs[i].data();
  }
  for (size_t si = 0; si < p.steps.size(); si++) {
    ExecContext c{p, r, si};
    p.steps[si]->Host(c);
  }
  return outs;
}

static void TestFuseDense(std::mt19937& g) {
  // y = Relu(x @ W + b): three steps fused into one Dense.
  const int64_t K = 5, N = 4, M = 3;
  Plan p;
  int x = p.Id("x"), t = p.Id("t"), u = p.Id("u"), y = p.Id("y");
  p.values[x].input = 0;
  p.values[y].output = 0;
  p.inputs = {x};
  p.outputs = {y};
  int b = Const(p, "b", {N}, Rand(N, g));
  auto& d = Add<DenseKernel>(p, "mm", {x}, {t});
  d.K = K;
  d.N = N;
  d.in_rank = 2;
  d.w = Rand(K * N, g);
  Add<BinaryKernel>(p, "add", {t, b}, {u}).op = kBinAdd;
  Add<UnaryKernel>(p, "relu", {u}, {y}).act = kActRelu;
  Fuse(p);
  Expect(p.steps.size() == 1, "fused to " + std::to_string(p.steps.size()) + " steps, want 1");
  auto* fused = dynamic_cast<const DenseKernel*>(p.steps[0].get());
  Expect(fused != nullptr && fused->act == kActRelu && fused->bias.size() == N && fused->out == std::vector<int>{y},
         "the fused Dense");
  if (fused == nullptr) return;
  std::vector<std::vector<float>> in = {Rand(M * K, g)};
  const std::vector<float> w = fused->w;  // PrepareHost packs and releases it
  Run r;
  auto out = HostRun(p, {{M, K}}, in, r);
  Expect(fused->w.empty() && !fused->packed.empty(), "the host executor keeps only the packed weights");
  Expect(r.shapes[y] == std::vector<int64_t>{M, N}, "the fused Dense's output shape");
  const auto& bias = p.values[b].c.f;
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      double acc = bias[n];
      for (int64_t k = 0; k < K; k++) acc += double(in[0][m * K + k]) * w[k * N + n];
      float want = static_cast<float>(std::max(acc, 0.0));
      Expect(std::fabs(out[0][m * N + n] - want) <= 1e-5f, "fused dense value");
    }
  // A wrong inner dimension names the node.
  Run bad;
  bad.shapes.assign(p.values.size(), {});
  bad.shapes[x] = {M, K + 1};
  std::string msg;
  try {
    InferRun(p, bad);
  } catch (Error& e) {
    msg = e.msg;
  }
  Expect(msg == "node mm: input's last dimension is not 5", "the shape error, got \"" + msg + "\"");
}

static void TestBinaryBroadcast(std::mt19937& g) {
  // [2,3,4] - [3,1]: the strides live in the step's aux.
  Plan p;
  int a = p.Id("a"), b = p.Id("b"), y = p.Id("y");
  p.values[a].input = 0;
  p.values[b].input = 1;
  p.values[y].output = 0;
  p.inputs = {a, b};
  p.outputs = {y};
  Add<BinaryKernel>(p, "sub", {a, b}, {y}).op = kBinSub;
  std::vector<std::vector<float>> in = {Rand(24, g), Rand(3, g)};
  Run r;
  auto out = HostRun(p, {{2, 3, 4}, {3, 1}}, in, r);
  Expect(r.shapes[y] == std::vector<int64_t>{2, 3, 4}, "broadcast shape");
  Expect(r.aux[0] == std::vector<int64_t>{12, 4, 1, 0, 1, 0}, "broadcast strides");
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++)
        Expect(out[0][i * 12 + j * 4 + k] == in[0][i * 12 + j * 4 + k] - in[1][j], "broadcast sub value");
}

// OneStep is a plan of one kernel K reading inputs named x0, x1, ... and writing y.
template <class K>
static K& OneStep(Plan& p, size_t inputs) {
  std::vector<int> in;
  for (size_t i = 0; i < inputs; i++) {
    int v = p.Id("x" + std::to_string(i));
    p.values[v].input = static_cast<int>(i);
    p.inputs.push_back(v);
    in.push_back(v);
  }
  int y = p.Id("y");
  p.values[y].output = 0;
  p.outputs = {y};
  return Add<K>(p, "k", in, {y});
}

static bool Near(float got, double want, double tol) { return std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want)); }

// Conv against the textbook loop: strides, asymmetric pads, dilations and groups (grouped,
// depthwise, a pointwise 1x1 without unfolding); and 32 output channels or more per group over
// several images, whose tiles of positions cross from one image into the next and (AVX-512)
// are stored transposed in registers. Kernels twice their stride run as Winograd F(2x2, 2x2)
// and 3x3 kernels of stride 1 as F(2x2, 3x3) (ops/conv.cc): a Nature CNN's three layers (odd
// output sizes: a last row and column of half tiles), with a fused ReLU, a rectangular kernel
// with channels not a multiple of 16, and a 3x3 one on a rectangular input.
static void TestConv(std::mt19937& g) {
  struct Case {
    int64_t N, C, H, W, OC, group, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
    bool bias;
    int32_t act = kActNone;
  };
  for (const Case& k : {Case{2, 4, 7, 6, 6, 2, 3, 2, 2, 1, 1, 2, 1, 0, 2, 1, true},
                        Case{3, 4, 5, 5, 4, 4, 3, 3, 1, 2, 2, 1, 2, 1, 0, 2, false},
                        Case{2, 3, 4, 5, 5, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, true},
                        Case{1, 2, 9, 8, 3, 1, 4, 4, 4, 3, 1, 1, 0, 0, 0, 0, true},
                        Case{3, 3, 12, 11, 40, 1, 3, 3, 2, 1, 1, 1, 0, 0, 0, 0, true},
                        Case{2, 2, 9, 9, 32, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false},
                        Case{3, 4, 6, 7, 64, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, true},
                        Case{3, 4, 84, 84, 32, 1, 8, 8, 4, 4, 1, 1, 0, 0, 0, 0, true, kActRelu},
                        Case{2, 32, 20, 19, 64, 1, 4, 4, 2, 2, 1, 1, 0, 0, 0, 0, true},
                        Case{2, 16, 9, 14, 20, 1, 2, 6, 1, 3, 1, 1, 0, 0, 0, 0, false},
                        Case{3, 64, 9, 9, 64, 1, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, true, kActRelu},
                        Case{2, 40, 8, 11, 24, 1, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, true}}) {
    Plan p;
    auto& conv = OneStep<ConvKernel>(p, 1);
    conv.C = k.C;
    conv.OC = k.OC;
    conv.group = k.group;
    conv.win.kh = k.kh;
    conv.win.kw = k.kw;
    conv.win.sh = k.sh;
    conv.win.sw = k.sw;
    conv.win.dh = k.dh;
    conv.win.dw = k.dw;
    conv.win.pt = k.pt;
    conv.win.pl = k.pl;
    conv.win.pb = k.pb;
    conv.win.pr = k.pr;
    conv.act = k.act;
    const int64_t Cg = k.C / k.group, OCg = k.OC / k.group;
    conv.w = Rand(k.OC * Cg * k.kh * k.kw, g);
    if (k.bias) conv.bias = Rand(k.OC, g);
    const int64_t OH = (k.H + k.pt + k.pb - k.dh * (k.kh - 1) - 1) / k.sh + 1;
    const int64_t OW = (k.W + k.pl + k.pr - k.dw * (k.kw - 1) - 1) / k.sw + 1;
    std::vector<std::vector<float>> in = {Rand(k.N * k.C * k.H * k.W, g)};
    Run r;
    auto out = HostRun(p, {{k.N, k.C, k.H, k.W}}, in, r);
    std::string what = "conv group " + std::to_string(k.group) + " kernel " + std::to_string(k.kh);
    Expect(r.shapes[p.outputs[0]] == std::vector<int64_t>{k.N, k.OC, OH, OW}, what + ": output shape");
    // The reference, then each value within 1e-5 of it relative to the output's largest
    // magnitude when above 1 (the CPU provider's contract, inference/native_test.go): sums of
    // 512 products of magnitude up to 1 differ by some 2e-5 between two float orders (the
    // direct form's and the Winograd form's alike, against this double one).
    std::vector<double> want(out[0].size());
    double scale = 1.0;
    for (int64_t n = 0; n < k.N; n++)
      for (int64_t oc = 0; oc < k.OC; oc++)
        for (int64_t oh = 0; oh < OH; oh++)
          for (int64_t ow = 0; ow < OW; ow++) {
            double acc = k.bias ? conv.bias[oc] : 0.0;
            const int64_t gi = oc / OCg;
            for (int64_t c = 0; c < Cg; c++)
              for (int64_t a = 0; a < k.kh; a++)
                for (int64_t b = 0; b < k.kw; b++) {
                  int64_t ih = oh * k.sh - k.pt + a * k.dh, iw = ow * k.sw - k.pl + b * k.dw;
                  if (ih < 0 || ih >= k.H || iw < 0 || iw >= k.W) continue;
                  acc += double(in[0][((n * k.C + gi * Cg + c) * k.H + ih) * k.W + iw]) *
                         conv.w[((oc * Cg + c) * k.kh + a) * k.kw + b];
                }
            if (k.act == kActRelu) acc = std::max(acc, 0.0);
            want[((n * k.OC + oc) * OH + oh) * OW + ow] = acc;
            scale = std::max(scale, std::fabs(acc));
          }
    int bad = 0;
    for (size_t i = 0; i < want.size(); i++)
      if (!(std::fabs(out[0][i] - want[i]) <= 1e-5 * scale)) bad++;
    Expect(bad == 0, what + ": " + std::to_string(bad) + " values differ from the reference");
  }
}

// The pools: ceil_mode output sizes (the last window starts inside the input or its leading
// pad), padding never in a max, averages over the window within the input or (count_include_pad)
// over the whole kernel.
static void TestPool(std::mt19937& g) {
  Window2d w;
  w.kh = 1;
  w.sh = 2;
  w.pb = 1;
  w.ceil = true;
  Expect(w.OutH(3) == 2, "ceil_mode: a last window that would start in the trailing pad is dropped");
  w.pb = 0;
  w.kh = 2;
  Expect(w.OutH(5) == 3, "ceil_mode rounds up");
  w.ceil = false;
  Expect(w.OutH(5) == 2, "floor mode rounds down");
  for (int mode = 0; mode < 3; mode++) {  // max, average, average counting the pads
    Plan p;
    auto& pool = OneStep<PoolKernel>(p, 1);
    pool.max = mode == 0;
    pool.include_pad = mode == 2;
    pool.win.kh = 3;
    pool.win.kw = 2;
    pool.win.sh = 2;
    pool.win.sw = 3;
    pool.win.dh = mode == 0 ? 2 : 1;
    pool.win.pt = 1;
    pool.win.pl = 1;
    pool.win.pb = 1;
    pool.win.pr = 0;
    pool.win.ceil = true;
    const int64_t N = 2, C = 3, H = 8, W = 7;
    std::vector<std::vector<float>> in = {Rand(N * C * H * W, g)};
    Run r;
    auto out = HostRun(p, {{N, C, H, W}}, in, r);
    const auto& ys = r.shapes[p.outputs[0]];
    // floor((8 + 2 - dh*2 - 1) / 2) + 1, rounded up; floor((7 + 1 - 2) / 3) + 1 = 3, rounded up.
    const int64_t OH = mode == 0 ? 4 : 5, OW = 3;
    Expect(ys == std::vector<int64_t>{N, C, OH, OW}, "pool mode " + std::to_string(mode) + ": output shape");
    if (ys != std::vector<int64_t>{N, C, OH, OW}) continue;
    int bad = 0;
    for (int64_t pl = 0; pl < N * C; pl++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          double acc = mode == 0 ? -1e30 : 0.0;
          int count = 0;
          for (int64_t a = 0; a < 3; a++)
            for (int64_t b = 0; b < 2; b++) {
              int64_t ih = oh * 2 - 1 + a * pool.win.dh, iw = ow * 3 - 1 + b;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              double v = in[0][(pl * H + ih) * W + iw];
              acc = mode == 0 ? std::max(acc, v) : acc + v;
              count++;
            }
          double want = mode == 0 ? acc : acc / (mode == 2 ? 6 : count);
          if (!Near(out[0][(pl * OH + oh) * OW + ow], want, 1e-6)) bad++;
        }
    Expect(bad == 0, "pool mode " + std::to_string(mode) + ": " + std::to_string(bad) + " values differ");
  }
}

static void TestLayerNorm(std::mt19937& g) {
  Plan p;
  auto& ln = OneStep<LayerNormKernel>(p, 1);
  ln.axis = -2;
  ln.epsilon = 1e-3f;
  ln.scale = Rand(10, g);
  ln.bias = Rand(10, g);
  std::vector<std::vector<float>> in = {Rand(3 * 2 * 5, g)};
  for (float& v : in[0]) v = v * 4 + 3;  // a mean far from 0
  Run r;
  auto out = HostRun(p, {{3, 2, 5}}, in, r);
  Expect(r.shapes[p.outputs[0]] == std::vector<int64_t>{3, 2, 5}, "layernorm shape");
  int bad = 0;
  for (int row = 0; row < 3; row++) {
    double m = 0, v = 0;
    for (int i = 0; i < 10; i++) m += in[0][row * 10 + i] / 10.0;
    for (int i = 0; i < 10; i++) v += (in[0][row * 10 + i] - m) * (in[0][row * 10 + i] - m) / 10.0;
    for (int i = 0; i < 10; i++) {
      double want = (in[0][row * 10 + i] - m) / std::sqrt(v + 1e-3) * ln.scale[i] + ln.bias[i];
      if (!Near(out[0][row * 10 + i], want, 1e-5)) bad++;
    }
  }
  Expect(bad == 0, "layernorm: " + std::to_string(bad) + " values differ");
  // A row that does not match the scale's length is a shape error.
  Run wrong;
  wrong.shapes.assign(p.values.size(), {});
  wrong.shapes[p.inputs[0]] = {2, 15};
  std::string msg;
  try {
    InferRun(p, wrong);
  } catch (Error& e) {
    msg = e.msg;
  }
  Expect(msg == "node k: the normalized dimensions do not match the scale's", "layernorm shape error: " + msg);
}

static void TestReduceMean(std::mt19937& g) {
  struct Case {
    std::vector<int64_t> axes;
    bool keepdims;
    std::vector<int64_t> shape;
  };
  const std::vector<int64_t> x = {2, 3, 4};
  std::vector<std::vector<float>> in = {Rand(24, g)};
  for (const Case& k : {Case{{1}, true, {2, 1, 4}}, Case{{-1}, true, {2, 3, 1}}, Case{{0, 2}, false, {3}},
                        Case{{}, true, {1, 1, 1}}, Case{{2, 1}, false, {2}}}) {
    Plan p;
    auto& red = OneStep<ReduceMeanKernel>(p, 1);
    red.axes = k.axes;
    red.keepdims = k.keepdims;
    Run r;
    auto out = HostRun(p, {x}, in, r);
    std::string what = "reducemean over " + std::to_string(k.axes.size()) + " axes";
    Expect(r.shapes[p.outputs[0]] == k.shape, what + ": shape");
    std::vector<bool> red_d(3, k.axes.empty());
    for (int64_t a : k.axes) red_d[(a + 3) % 3] = true;
    std::vector<double> sum(24, 0.0);
    std::vector<int> cnt(24, 0);
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 3; j++)
        for (int l = 0; l < 4; l++) {
          int oi = red_d[0] ? 0 : i, oj = red_d[1] ? 0 : j, ol = red_d[2] ? 0 : l;
          int o = (oi * (red_d[1] ? 1 : 3) + oj) * (red_d[2] ? 1 : 4) + ol;
          sum[o] += in[0][(i * 3 + j) * 4 + l];
          cnt[o]++;
        }
    int bad = 0;
    for (size_t o = 0; o < out[0].size(); o++)
      if (!Near(out[0][o], sum[o] / cnt[o], 1e-6)) bad++;
    Expect(bad == 0 && !out[0].empty(), what + ": " + std::to_string(bad) + " values differ");
  }
}

// Pow's forms and Erf's accuracy against double precision.
static void TestElementwise() {
  const float xs[] = {0.0f, 0.25f, 1.0f, 1.5f, 3.0f, 10.0f};
  for (float x : xs) {
    Expect(ApplyAct(kActSquare, x, 0, 0) == x * x, "x^2");
    Expect(Near(ApplyAct(kActSqrt, x, 0, 0), std::sqrt(double(x)), 1e-7), "x^0.5");
    Expect(Near(ApplyAct(kActPow, x, 1.7f, 0), std::pow(double(x), 1.7), 1e-6), "x^1.7");
    Expect(Near(ApplyAct(kActPow, x + 1, -1.0f, 0), 1.0 / (x + 1.0), 1e-6), "x^-1");
    Expect(Near(ApplyBin(kBinPow, x, 3.0f), std::pow(double(x), 3.0), 1e-6), "x^y");
  }
  double worst = 0;
  for (int i = -60000; i <= 60000; i++) {
    float x = i * 1e-4f;
    worst = std::max(worst, std::fabs(ApplyAct(kActErf, x, 0, 0) - std::erf(double(x))));
  }
  // ErfOf (kernels.h): 3.2e-7 measured (float32 rounding of the rational fit, about 3 ulp of 1).
  char msg[96];
  std::snprintf(msg, sizeof msg, "erf's largest error on [-6, 6] is %.3g", worst);
  Expect(worst <= 4e-7, msg);
  // GELU through it: x * 0.5 * (1 + erf(x / sqrt 2)).
  double gelu = 1.0 * 0.5 * (1.0 + ApplyAct(kActErf, 1.0f / std::sqrt(2.0f), 0, 0));
  Expect(std::fabs(gelu - 0.8413447460685429) < 1e-6, "gelu(1)");
}

// Reverse and bidirectional LSTM and GRU: each direction equals a forward layer run over the
// time-reversed sequence, Y laid out [T, directions, B, H].
static void TestRnnDirections(std::mt19937& g) {
  const int64_t T = 4, B = 3, I = 5, H = 6;
  for (int lstm = 0; lstm < 2; lstm++) {
    for (int bidi = 0; bidi < 2; bidi++) {
      const int64_t D = bidi ? 2 : 1, G = lstm ? 4 : 3;
      Plan p;
      std::vector<int> in;
      for (int i = 0; i < (lstm ? 3 : 2); i++) {
        int v = p.Id("x" + std::to_string(i));
        p.values[v].input = i;
        p.inputs.push_back(v);
        in.push_back(v);
      }
      if (!lstm) in.push_back(-1);
      std::vector<int> outs;
      for (int i = 0; i < (lstm ? 3 : 2); i++) {
        int v = p.Id("y" + std::to_string(i));
        p.values[v].output = i;
        p.outputs.push_back(v);
        outs.push_back(v);
      }
      if (!lstm) outs.push_back(-1);
      RnnKernel* k = nullptr;
      if (lstm) {
        k = &Add<LstmKernel>(p, "rnn", in, outs);
      } else {
        k = &Add<GruKernel>(p, "rnn", in, outs);
      }
      k->H = H;
      k->I = I;
      k->dirs.resize(D);
      for (int64_t d = 0; d < D; d++) {
        k->dirs[d].reverse = !bidi || d == 1;
        k->dirs[d].wx = Rand(I * G * H, g);
        k->dirs[d].wh = Rand(H * G * H, g);
        k->dirs[d].bx = Rand(G * H, g);
        k->dirs[d].bh = Rand(G * H, g);
      }
      std::vector<std::vector<float>> ins = {Rand(T * B * I, g), Rand(D * B * H, g)};
      std::vector<std::vector<int64_t>> shapes = {{T, B, I}, {D, B, H}};
      if (lstm) {
        ins.push_back(Rand(D * B * H, g));
        shapes.push_back({D, B, H});
      }
      Run r;
      auto out = HostRun(p, shapes, ins, r);
      std::string what = std::string(lstm ? "lstm" : "gru") + (bidi ? " bidirectional" : " reverse");
      Expect(r.shapes[outs[0]] == std::vector<int64_t>{T, D, B, H}, what + ": Y's shape");
      int bad = 0;
      for (int64_t d = 0; d < D; d++) {
        // The reference: the whole sequence through the host loop at once, in the direction's order.
        std::vector<float> x(T * B * I), y(T * B * H), yh(B * H), yc(B * H), scratch(RnnScratch(G, I, H, B));
        for (int64_t t = 0; t < T; t++) {
          int64_t src = k->dirs[d].reverse ? T - 1 - t : t;
          std::copy(ins[0].begin() + src * B * I, ins[0].begin() + (src + 1) * B * I, x.begin() + t * B * I);
        }
        const float* h0 = ins[1].data() + d * B * H;
        if (lstm) {
          HostLstm(k->Weights(d), x.data(), T, B, h0, ins[2].data() + d * B * H, y.data(), yh.data(), yc.data(),
                   scratch.data());
        } else {
          HostGru(k->Weights(d), false, x.data(), T, B, h0, y.data(), yh.data(), scratch.data());
        }
        for (int64_t t = 0; t < T; t++) {
          int64_t src = k->dirs[d].reverse ? T - 1 - t : t;
          for (int64_t i = 0; i < B * H; i++)
            if (!Near(out[0][(src * D + d) * B * H + i], y[t * B * H + i], 1e-6)) bad++;
        }
        for (int64_t i = 0; i < B * H; i++) {
          if (!Near(out[1][d * B * H + i], yh[i], 1e-6)) bad++;
          if (lstm && !Near(out[2][d * B * H + i], yc[i], 1e-6)) bad++;
        }
      }
      Expect(bad == 0, what + ": " + std::to_string(bad) + " values differ from the reversed forward run");
    }
  }
}

// The exact GELU as exporters write it (Div, Erf, Add, Mul, Mul) becomes one step, which then
// folds into the LayerNorm before it; the values match erf-based GELU in double precision.
static void TestFuseGeluIntoLayerNorm(std::mt19937& g) {
  const int64_t M = 5, L = 19;
  Plan p;
  int x = p.Id("x"), n = p.Id("n"), d = p.Id("d"), e = p.Id("e"), a = p.Id("a"), m = p.Id("m"), y = p.Id("y");
  p.values[x].input = 0;
  p.values[y].output = 0;
  p.inputs = {x};
  p.outputs = {y};
  std::vector<float> scale = Rand(L, g), bias = Rand(L, g);
  auto& ln = Add<LayerNormKernel>(p, "ln", {x}, {n});
  ln.scale = scale;
  ln.bias = bias;
  int sqrt2 = Const(p, "sqrt2", {}, {1.41421356f}), one = Const(p, "one", {}, {1.0f}), half = Const(p, "half", {}, {0.5f});
  Add<BinaryKernel>(p, "div", {n, sqrt2}, {d}).op = kBinDiv;
  Add<UnaryKernel>(p, "erf", {d}, {e}).act = kActErf;
  Add<BinaryKernel>(p, "add", {e, one}, {a}).op = kBinAdd;
  Add<BinaryKernel>(p, "mul", {n, a}, {m}).op = kBinMul;
  Add<BinaryKernel>(p, "mul_1", {m, half}, {y}).op = kBinMul;
  Fuse(p);
  Expect(p.steps.size() == 1, "GELU fused into the LayerNorm: " + std::to_string(p.steps.size()) + " steps, want 1");
  auto* fused = dynamic_cast<const LayerNormKernel*>(p.steps[0].get());
  Expect(fused != nullptr && fused->act == kActGelu && fused->out == std::vector<int>{y}, "the fused LayerNorm");
  std::vector<std::vector<float>> in = {Rand(M * L, g)};
  for (float& v : in[0]) v *= 4.0f;
  Run r;
  auto out = HostRun(p, {{M, L}}, in, r);
  for (int64_t i = 0; i < M; i++) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < L; j++) mean += in[0][i * L + j];
    mean /= L;
    for (int64_t j = 0; j < L; j++) var += (in[0][i * L + j] - mean) * (in[0][i * L + j] - mean);
    var /= L;
    for (int64_t j = 0; j < L; j++) {
      double v = (in[0][i * L + j] - mean) / std::sqrt(var + 1e-5) * scale[j] + bias[j];
      double want = v * 0.5 * (1.0 + std::erf(v / std::sqrt(2.0)));
      Expect(Near(out[0][i * L + j], want, 2e-6), "fused LayerNorm + GELU value");
    }
  }
  // Not the pattern: a Mul by 0.4 instead of 0.5 stays as it is.
  Plan q;
  int qx = q.Id("x"), qd = q.Id("d"), qe = q.Id("e"), qa = q.Id("a"), qm = q.Id("m"), qy = q.Id("y");
  q.values[qx].input = 0;
  q.values[qy].output = 0;
  int s2 = Const(q, "sqrt2", {}, {1.41421356f}), o1 = Const(q, "one", {}, {1.0f}), h4 = Const(q, "h", {}, {0.4f});
  Add<BinaryKernel>(q, "div", {qx, s2}, {qd}).op = kBinDiv;
  Add<UnaryKernel>(q, "erf", {qd}, {qe}).act = kActErf;
  Add<BinaryKernel>(q, "add", {qe, o1}, {qa}).op = kBinAdd;
  Add<BinaryKernel>(q, "mul", {qx, qa}, {qm}).op = kBinMul;
  Add<BinaryKernel>(q, "mul_1", {qm, h4}, {qy}).op = kBinMul;
  Fuse(q);
  Expect(q.steps.size() == 5, "a near-GELU left as it is");
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::printf("usage: test_ep_ops README.md\n");
    return 2;
  }
  std::mt19937 g(42);
  TestRegistry(argv[1]);
  TestFuseDense(g);
  TestBinaryBroadcast(g);
  TestConv(g);
  TestPool(g);
  TestLayerNorm(g);
  TestReduceMean(g);
  TestElementwise();
  TestFuseGeluIntoLayerNorm(g);
  TestRnnDirections(g);
  if (failures) {
    std::printf("%d failures\n", failures);
    return 1;
  }
  std::printf("ok: %zu op types registered\n", RegisteredOps().size());
  return 0;
}
