// Relu, LeakyRelu, Tanh, Sigmoid, Exp, Log, Neg, Clip, Erf, Sqrt: elementwise activations.
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "../lower_util.h"
#include "ops.h"
#include "../cuda/device_args.h"
#include "../cuda/device_context.h"

namespace onnxrl_ep {

namespace {

void LowerUnary(const OrtNode* n, Plan& p) {
  std::string op = OpType(n);
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  auto s = std::make_unique<UnaryKernel>();
  s->node = NodeName(n);
  s->in = {In(p, ins.at(0))};
  if (op == "Relu") {
    s->act = kActRelu;
  } else if (op == "LeakyRelu") {
    s->act = kActLeakyRelu;
    s->a = AttrFloat(n, "alpha", 0.01f);
  } else if (op == "Tanh") {
    s->act = kActTanh;
  } else if (op == "Sigmoid") {
    s->act = kActSigmoid;
  } else if (op == "Exp") {
    s->act = kActExp;
  } else if (op == "Log") {
    s->act = kActLog;
  } else if (op == "Neg") {
    s->act = kActNeg;
  } else if (op == "Erf") {
    s->act = kActErf;
  } else if (op == "Sqrt") {
    s->act = kActSqrt;
  } else if (op == "Clip") {
    s->act = kActClip;
    if (SinceVersion(n) < 11) {
      s->a = AttrFloat(n, "min", -FLT_MAX);
      s->b = AttrFloat(n, "max", FLT_MAX);
    } else {
      s->a = Present(ins, 1) ? ScalarParam(ins[1], "Clip min") : -INFINITY;
      s->b = Present(ins, 2) ? ScalarParam(ins[2], "Clip max") : INFINITY;
    }
  }
  s->out = {Out(p, outs.at(0))};
  p.steps.push_back(std::move(s));
}

const OpRegistrar kRegistrar({"Relu", "LeakyRelu", "Tanh", "Sigmoid", "Exp", "Log", "Neg", "Clip", "Erf", "Sqrt"},
                             LowerUnary);

// Producer is the step writing v, or -1; SoleReader the one step reading v when v is read by
// exactly one and is no fused output, or -1.
int Producer(const Plan& p, int v) {
  for (size_t i = 0; i < p.steps.size(); i++)
    for (int o : p.steps[i]->out)
      if (o == v) return static_cast<int>(i);
  return -1;
}

int SoleReader(const Plan& p, int v) {
  if (v < 0 || p.values[v].output >= 0) return -1;
  int found = -1;
  for (size_t i = 0; i < p.steps.size(); i++)
    for (int x : p.steps[i]->in)
      if (x == v) {
        if (found >= 0 && found != static_cast<int>(i)) return -1;
        found = static_cast<int>(i);
      }
  return found;
}

// IsScalar says whether value v is a float constant of one element within 1e-6 of want.
bool IsScalar(const Plan& p, int v, float want) {
  if (v < 0 || !p.values[v].is_const) return false;
  const ConstTensor& c = p.values[v].c;
  return c.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT && c.f.size() == 1 && std::fabs(c.f[0] - want) <= 1e-6f;
}

// BinaryWith is step i as a Binary op of kind op with v as one operand; *other gets the other.
const BinaryKernel* BinaryWith(const Plan& p, int i, int32_t op, int v, int* other) {
  if (i < 0) return nullptr;
  auto* b = dynamic_cast<const BinaryKernel*>(p.steps[i].get());
  if (b == nullptr || b->op != op || b->in.size() != 2) return nullptr;
  if (b->in[0] == v) {
    *other = b->in[1];
  } else if (b->in[1] == v) {
    *other = b->in[0];
  } else {
    return nullptr;
  }
  return b;
}

// FuseGeluOnce replaces the first exact GELU the exporters write, x * (1 + Erf(x / sqrt 2)) *
// 0.5 (Div or Mul by 1/sqrt 2; the two Muls in either order), by one Unary step.
bool FuseGeluOnce(Plan& p) {
  for (size_t ei = 0; ei < p.steps.size(); ei++) {
    auto* erf = dynamic_cast<const UnaryKernel*>(p.steps[ei].get());
    if (erf == nullptr || erf->act != kActErf) continue;
    const int di = Producer(p, erf->in[0]);
    if (di < 0 || SoleReader(p, erf->in[0]) != static_cast<int>(ei)) continue;
    auto* div = dynamic_cast<const BinaryKernel*>(p.steps[di].get());
    if (div == nullptr || div->in.size() != 2) continue;
    const bool scaled = (div->op == kBinDiv && IsScalar(p, div->in[1], 1.41421356f)) ||
                        (div->op == kBinMul && IsScalar(p, div->in[1], 0.70710678f));
    if (!scaled) continue;
    const int x = div->in[0];
    int one = -1, f1 = -1, f2 = -1;
    const int ai = SoleReader(p, erf->out[0]);
    const BinaryKernel* add = BinaryWith(p, ai, kBinAdd, erf->out[0], &one);
    if (add == nullptr || !IsScalar(p, one, 1.0f)) continue;
    const int m1 = SoleReader(p, add->out[0]);
    const BinaryKernel* mul1 = BinaryWith(p, m1, kBinMul, add->out[0], &f1);
    if (mul1 == nullptr) continue;
    const int m2 = SoleReader(p, mul1->out[0]);
    const BinaryKernel* mul2 = BinaryWith(p, m2, kBinMul, mul1->out[0], &f2);
    if (mul2 == nullptr) continue;
    if (!((f1 == x && IsScalar(p, f2, 0.5f)) || (f2 == x && IsScalar(p, f1, 0.5f)))) continue;
    auto g = std::make_unique<UnaryKernel>();
    g->node = erf->node;
    g->act = kActGelu;
    g->in = {x};
    g->out = mul2->out;
    std::vector<size_t> drop = {static_cast<size_t>(di), ei, static_cast<size_t>(ai), static_cast<size_t>(m1),
                                static_cast<size_t>(m2)};
    // The GELU takes the place of its last step (every reader of its output comes later).
    p.steps[m2] = std::move(g);
    drop.pop_back();
    std::sort(drop.rbegin(), drop.rend());
    for (size_t i : drop) p.steps.erase(p.steps.begin() + i);
    return true;
  }
  return false;
}

}  // namespace

void FuseGelu(Plan& p) {
  while (FuseGeluOnce(p)) {
  }
}

void UnaryKernel::Infer(InferContext& c) const { c.set_shape(out[0], c.in_shape(0)); }

void UnaryKernel::Host(ExecContext& c) const {
  HostUnary(act, a, b, c.CF(in[0]), c.F(out[0]), NumElements(c.shape(out[0])));
}

void UnaryKernel::Device(DeviceContext& c) const {
  long long n = NumElements(c.shape(out[0]));
  cu::CUdeviceptr pi = c.ptr(in[0]), po = c.ptr(out[0]);
  int code = act;
  float pa = a, pb = b;
  c.Elementwise("onnxrl_unary", n, {&pi, &po, &n, &code, &pa, &pb});
}


}  // namespace onnxrl_ep
