// Pow: a constant scalar exponent is a Unary step (x * x for 2, sqrtf for 0.5, powf otherwise);
// any other float exponent (a constant tensor or a runtime value), a broadcasting Binary.
#include "../lower_util.h"
#include "ops.h"

namespace onnxrl_ep {

namespace {

void LowerPow(const OrtNode* n, Plan& p) {
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  if (ins.size() < 2) Unsupported("Pow without an exponent");
  if (IsConstant(ins[1])) {
    ConstTensor e = Param(ins[1], "Pow exponent");
    if (e.size() == 1) {
      float x = e.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT ? e.f.at(0) : static_cast<float>(e.i.at(0));
      auto s = std::make_unique<UnaryKernel>();
      s->node = NodeName(n);
      s->in = {In(p, ins[0])};
      s->act = x == 2.0f ? kActSquare : x == 0.5f ? kActSqrt : kActPow;
      s->a = x;
      s->out = {Out(p, outs.at(0))};
      p.steps.push_back(std::move(s));
      return;
    }
    if (e.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) Unsupported("an integer exponent tensor (only scalars)");
  }
  auto s = std::make_unique<BinaryKernel>();
  s->node = NodeName(n);
  s->op = kBinPow;
  s->in = {In(p, ins[0]), In(p, ins[1])};
  s->out = {Out(p, outs.at(0))};
  p.steps.push_back(std::move(s));
}

const OpRegistrar kRegistrar({"Pow"}, LowerPow);

}  // namespace

}  // namespace onnxrl_ep
