// Relu, LeakyRelu, Tanh, Sigmoid, Exp, Log, Neg, Clip, Erf, Sqrt: elementwise activations.
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

}  // namespace

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
