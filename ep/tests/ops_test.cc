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
  Expect(FindLowering("Conv") == nullptr, "Conv has a lowering");
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

// Host plans run for the given input shapes and buffers; the outputs' buffers are returned.
static std::vector<std::vector<float>> HostRun(const Plan& p, const std::vector<std::vector<int64_t>>& shapes,
                                               std::vector<std::vector<float>>& inputs, Run& r) {
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
  Run r;
  auto out = HostRun(p, {{M, K}}, in, r);
  Expect(r.shapes[y] == std::vector<int64_t>{M, N}, "the fused Dense's output shape");
  const auto& bias = p.values[b].c.f;
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      double acc = bias[n];
      for (int64_t k = 0; k < K; k++) acc += double(in[0][m * K + k]) * fused->w[k * N + n];
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

int main(int argc, char** argv) {
  if (argc != 2) {
    std::printf("usage: test_ep_ops README.md\n");
    return 2;
  }
  std::mt19937 g(42);
  TestRegistry(argv[1]);
  TestFuseDense(g);
  TestBinaryBroadcast(g);
  if (failures) {
    std::printf("%d failures\n", failures);
    return 1;
  }
  std::printf("ok: %zu op types registered\n", RegisteredOps().size());
  return 0;
}
