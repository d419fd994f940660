// MatMul and Gemm with constant weights: one Dense kernel, and the fusions of a bias Add or an
// activation into it.
#include <algorithm>

#include "../lower_util.h"
#include "nn.h"
#include "ops.h"
#include "../cuda/device_args.h"
#include "../cuda/device_context.h"

namespace onnxrl_ep {

namespace {

void LowerDense(const OrtNode* n, Plan& p) {
  const bool gemm = OpType(n) == "Gemm";
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  if (ins.size() < 2) Unsupported("fewer than two inputs");
  if (!IsConstant(ins[1])) Unsupported("the weight input " + ValueName(ins[1]) + " is not a constant initializer");
  int a = In(p, ins[0]);
  ConstTensor w = Param(ins[1], "weight");
  if (w.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || w.shape.size() != 2) Unsupported("the weight is not a 2-D float32 tensor");
  auto s = std::make_unique<DenseKernel>();
  s->node = NodeName(n);
  if (!gemm) {
    auto sh = Shape(ins[0]);
    if (!sh || sh->empty()) Unsupported("MatMul input of unknown or zero rank");
    s->in_rank = static_cast<int64_t>(sh->size());
    s->K = w.shape[0];
    s->N = w.shape[1];
    s->w = std::move(w.f);
  } else {
    auto sh = Shape(ins[0]);
    if (!sh || sh->size() != 2) Unsupported("Gemm input A is not 2-D");
    s->in_rank = 2;
    if (AttrInt(n, "transA", 0) != 0) Unsupported("Gemm with transA=1");
    bool tb = AttrInt(n, "transB", 0) != 0;
    float alpha = AttrFloat(n, "alpha", 1.0f);
    float beta = AttrFloat(n, "beta", 1.0f);
    s->K = tb ? w.shape[1] : w.shape[0];
    s->N = tb ? w.shape[0] : w.shape[1];
    // With K = 0 the CPU provider's Gemm gives C unscaled, not beta * C: left to it.
    if (s->K == 0 && Present(ins, 2) && beta != 1.0f) Unsupported("Gemm with K=0 and beta != 1");
    s->w.resize(s->K * s->N);
    for (int64_t k = 0; k < s->K; k++) {
      for (int64_t j = 0; j < s->N; j++) {
        float v = tb ? w.f[j * s->K + k] : w.f[k * s->N + j];
        s->w[k * s->N + j] = alpha * v;
      }
    }
    if (Present(ins, 2) && !IsConstant(ins[2])) {
      // A runtime C (the runtime's MatMul+Add fusion makes these): Dense, then a broadcast Add.
      if (beta != 1.0f) Unsupported("Gemm with a non-constant C and beta != 1");
      int c = In(p, ins[2]);
      int tmp = p.Id(ValueName(outs.at(0)) + "/onnxrl_gemm_ab");
      s->in = {a};
      s->out = {tmp};
      p.steps.push_back(std::move(s));
      auto add = std::make_unique<BinaryKernel>();
      add->op = kBinAdd;
      add->node = NodeName(n);
      add->in = {tmp, c};
      add->out = {Out(p, outs.at(0))};
      p.steps.push_back(std::move(add));
      return;
    }
    if (Present(ins, 2)) {
      ConstTensor c = ReadConstant(ins[2]);
      if (c.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) Unsupported("Gemm's C is not float32");
      int64_t sz = c.size();
      bool row = sz == s->N && (c.shape.size() == 1 || (c.shape.size() == 2 && c.shape[0] == 1));
      bool scalar = sz == 1;
      if (!row && !scalar) Unsupported("Gemm's C is not a row of N values or a scalar");
      s->bias.resize(s->N);
      for (int64_t j = 0; j < s->N; j++) s->bias[j] = beta * (scalar ? c.f[0] : c.f[j]);
    }
  }
  s->in = {a};
  s->out = {Out(p, outs.at(0))};
  p.steps.push_back(std::move(s));
}

const OpRegistrar kRegistrar({"MatMul", "Gemm"}, LowerDense);

std::vector<int> Consumers(const Plan& p, int v) {
  std::vector<int> c;
  for (size_t i = 0; i < p.steps.size(); i++)
    for (int x : p.steps[i]->in)
      if (x == v) c.push_back(static_cast<int>(i));
  return c;
}

bool FuseOnce(Plan& p) {
  for (size_t i = 0; i < p.steps.size(); i++) {
    auto* d = dynamic_cast<DenseKernel*>(p.steps[i].get());
    if (d == nullptr) continue;
    int v = d->out[0];
    if (p.values[v].output >= 0) continue;
    auto cons = Consumers(p, v);
    if (cons.size() != 1) continue;
    Kernel* next = p.steps[cons[0]].get();
    if (auto* s = dynamic_cast<BinaryKernel*>(next); s != nullptr && s->op == kBinAdd && d->act == kActNone) {
      int other = s->in[0] == v ? s->in[1] : s->in[0];
      if (other == v || !p.values[other].is_const) continue;
      const ConstTensor& c = p.values[other].c;
      // A row of N, of a rank the output has already: a [1, N] Add after a 1-D MatMul makes
      // its output [1, N], which a folded bias would not.
      bool row = c.size() == d->N && (c.shape.size() == 1 || (c.shape.size() == 2 && c.shape[0] == 1)) &&
                 static_cast<int64_t>(c.shape.size()) <= d->in_rank;
      if (!row) continue;
      if (d->bias.empty()) d->bias.assign(d->N, 0.0f);
      for (int64_t j = 0; j < d->N; j++) d->bias[j] += c.f[j];
      d->out = s->out;
      p.steps.erase(p.steps.begin() + cons[0]);
      return true;
    }
    if (auto* s = dynamic_cast<UnaryKernel*>(next);
        s != nullptr && d->act == kActNone &&
        (s->act == kActRelu || s->act == kActLeakyRelu || s->act == kActTanh || s->act == kActSigmoid ||
         s->act == kActClip || s->act == kActGelu)) {
      d->act = s->act;
      d->a = s->a;
      d->b = s->b;
      d->out = s->out;
      p.steps.erase(p.steps.begin() + cons[0]);
      return true;
    }
  }
  return false;
}

}  // namespace

void DenseKernel::Infer(InferContext& c) const {
  const auto& x = c.in_shape(0);
  if (x.empty() || x.back() != K) c.Fail("input's last dimension is not " + std::to_string(K));
  auto o = x;
  o.back() = N;
  c.set_shape(out[0], std::move(o));
}

void DenseKernel::PrepareHost() {
  if (!packed.empty()) return;  // prepared already
  packed = PackedWeights::Pack(w.data(), K, N, N, bias.empty() ? nullptr : bias.data());
  std::vector<float>().swap(w);
  std::vector<float>().swap(bias);
}

void DenseKernel::Host(ExecContext& c) const {
  if (packed.empty()) throw Error{"node " + node + ": the host executor did not prepare this step"};
  const float* x = c.CF(in[0]);
  float* y = c.F(out[0]);
  Epilogue e;
  e.act = act;
  e.a = a;
  e.b = b;
  c.ParallelRows(MatrixRows(c.shape(in[0])), K * N,
                 [&](int64_t m0, int64_t m1) { Gemm(x + m0 * K, K, m1 - m0, packed, 0, N, e, y + m0 * N, N); });
}

void DenseKernel::Device(DeviceContext& c) const {
  const auto& a = c.shape(in[0]);
  const long long M = MatrixRows(a);
  c.Gemm(c.ptr(in[0]), K, c.Resident(w), N, c.Resident(bias), c.ptr(out[0]), N, M, N, K, false, act, this->a, b);
}


std::map<size_t, DenseGroup> FindDenseGroups(const Plan& p, size_t max_layers, size_t max_heads, int64_t max_width) {
  const auto& steps = p.steps;
  std::map<size_t, DenseGroup> groups;
  std::vector<bool> taken(steps.size(), false);
  auto dense = [&](size_t si) -> const DenseKernel* {
    return si < steps.size() && !taken[si] ? dynamic_cast<const DenseKernel*>(steps[si].get()) : nullptr;
  };
  auto dense_at = [&](size_t si) { return static_cast<const DenseKernel*>(steps[si].get()); };
  auto consumers = [&](int v) {
    std::vector<size_t> c;
    for (size_t si = 0; si < steps.size(); si++)
      for (int x : steps[si]->in)
        if (x == v) {
          c.push_back(si);
          break;
        }
    return c;
  };
  // heads_of: the Dense steps reading v, when every reader of v is one (2 to max_heads of them).
  auto heads_of = [&](int v) {
    std::vector<size_t> c = consumers(v);
    if (p.values[v].output >= 0 || c.size() < 2 || c.size() > max_heads) return std::vector<size_t>{};
    for (size_t si : c)
      if (dense(si) == nullptr || steps[si]->in[0] != v || dense(si)->K != dense(c[0])->K) return std::vector<size_t>{};
    return c;
  };
  for (size_t si = 0; si < steps.size(); si++) {
    const DenseKernel* d = dense(si);
    if (d == nullptr) continue;
    DenseGroup g;
    int64_t width = d->K;
    std::vector<size_t> heads = heads_of(d->in[0]);
    if (!heads.empty() && heads[0] == si) {
      g.heads = heads;  // heads alone, on a shared input
    } else {
      g.trunk = {si};
      width = std::max(d->K, d->N);
      for (;;) {
        int v = steps[g.trunk.back()]->out[0];
        size_t next = g.trunk.back() + 1;
        const DenseKernel* nx = dense(next);
        if (g.trunk.size() + 1 >= max_layers) break;
        if (nx == nullptr || nx->in[0] != v || p.values[v].output >= 0 || consumers(v).size() != 1) break;
        if (nx->K != dense_at(g.trunk.back())->N) break;  // a hostile graph's mismatch: Infer reports it
        if (std::max({width, nx->K, nx->N}) > max_width) break;
        width = std::max({width, nx->K, nx->N});
        g.trunk.push_back(next);
      }
      heads = heads_of(steps[g.trunk.back()]->out[0]);
      if (!heads.empty() && dense(heads[0])->K != dense_at(g.trunk.back())->N) heads.clear();
      if (!heads.empty() && g.trunk.size() + heads.size() <= max_layers) {
        g.heads = heads;
      } else {
        g.heads = {g.trunk.back()};  // the chain's last layer writes the output
        g.trunk.pop_back();
      }
    }
    for (size_t h : g.heads) width = std::max({width, dense(h)->K, dense(h)->N});
    if (g.trunk.size() + g.heads.size() < 2 || width > max_width) continue;
    for (size_t x : g.trunk) taken[x] = true;
    for (size_t x : g.heads) taken[x] = true;
    groups[si] = g;
  }
  return groups;
}

void Fuse(Plan& p) {
  FuseGelu(p);
  while (FuseOnce(p) || FuseIntoLayerNorm(p) || FuseIntoConv(p)) {
  }
}

}  // namespace onnxrl_ep
