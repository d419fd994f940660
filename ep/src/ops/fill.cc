// ConstantOfShape: a float32 fill, its shape a constant or a Shape node's output.
#include <algorithm>

#include "../lower_util.h"
#include "../cuda/device_args.h"
#include "../cuda/device_context.h"

namespace onnxrl_ep {

namespace {

struct FillKernel : Kernel {
  const char* Kind() const override { return "Fill"; }

  void Infer(InferContext& c) const override {
    int v = in[0];
    if (c.plan.values[v].is_const) {
      c.set_shape(out[0], c.plan.values[v].c.i);
    } else if (c.plan.values[v].input >= 0) {
      c.Fail("the shape is computed outside the provider's partition");  // its values are not known here
    } else {
      c.set_shape(out[0], c.shape_data[v]);
    }
  }

  void Host(ExecContext& c) const override {
    float* y = c.F(out[0]);
    std::fill(y, y + NumElements(c.shape(out[0])), value);
  }

  void Device(DeviceContext& c) const override {
    long long n = NumElements(c.shape(out[0]));
    cu::CUdeviceptr po = c.ptr(out[0]);
    float v = value;
    c.Elementwise("onnxrl_fill", n, {&po, &n, &v});
  }

  float value = 0;
};

void LowerFill(const OrtNode* n, Plan& p) {
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  auto s = std::make_unique<FillKernel>();
  s->node = NodeName(n);
  if (auto v = AttrTensor(n, "value")) {
    if (v->type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || v->f.size() != 1) Unsupported("a value that is not one float32");
    s->value = v->f[0];
  }
  const OrtNode* prod = Producer(ins.at(0));
  int id = p.Id(ValueName(ins[0]));
  if (IsConstant(ins[0])) {
    p.values[id].c = ReadConstant(ins[0]);
    p.values[id].is_const = true;
    p.values[id].type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
  } else if (prod == nullptr || OpType(prod) != "Shape") {
    Unsupported("ConstantOfShape whose shape is neither constant nor a Shape node's output");
  } else {
    p.values[id].type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
  }
  s->in = {id};
  s->out = {Out(p, outs.at(0))};
  p.steps.push_back(std::move(s));
}

const OpRegistrar kRegistrar({"ConstantOfShape"}, LowerFill);

}  // namespace

}  // namespace onnxrl_ep
