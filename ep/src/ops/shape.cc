// Shape: the int64 dimensions [start, end) of its input, which may have any element type.
#include <algorithm>
#include <climits>

#include "../lower_util.h"
#include "../cuda/device_args.h"
#include "../cuda/device_context.h"

namespace onnxrl_ep {

namespace {

struct ShapeKernel : Kernel {
  const char* Kind() const override { return "Shape"; }

  // First is the first dimension copied, of a rank-dimensional input.
  int64_t First(int64_t rank) const { return start < 0 ? std::max<int64_t>(0, start + rank) : std::min(start, rank); }

  void Infer(InferContext& c) const override {
    const auto& a = c.in_shape(0);
    int64_t rank = static_cast<int64_t>(a.size());
    int64_t b = First(rank);
    int64_t e = end < 0 ? std::max<int64_t>(0, end + rank) : std::min(end, rank);
    std::vector<int64_t> data;
    for (int64_t i = b; i < e; i++) data.push_back(a[i]);
    c.set_shape(out[0], {static_cast<int64_t>(data.size())});
    c.shape_data[out[0]] = data;
  }

  void Host(ExecContext& c) const override {
    const auto& a = c.shape(in[0]);
    int64_t b = First(static_cast<int64_t>(a.size()));
    int64_t* y = static_cast<int64_t*>(c.ptr(out[0]));
    for (int64_t i = 0; i < NumElements(c.shape(out[0])); i++) y[i] = a[b + i];
  }

  void Device(DeviceContext& c) const override {
    // The dims are known when the signature is planned: written once, not replayed.
    const auto& a = c.shape(in[0]);
    int64_t b = First(static_cast<int64_t>(a.size()));
    int64_t n = NumElements(c.shape(out[0]));
    c.Static(c.ptr(out[0]), a.data() + b, static_cast<size_t>(n) * sizeof(int64_t));
  }

  int64_t start = 0, end = LLONG_MAX;
};

void LowerShape(const OrtNode* n, Plan& p) {
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  auto s = std::make_unique<ShapeKernel>();
  s->node = NodeName(n);
  s->start = AttrInt(n, "start", 0);
  s->end = AttrInt(n, "end", LLONG_MAX);
  // Only the shape is read: any element type will do, but it has to be a value of the plan.
  int id = p.Id(ValueName(ins.at(0)));
  if (IsConstant(ins[0]) && !p.values[id].is_const) {
    p.values[id].c = ReadConstant(ins[0]);
    p.values[id].is_const = true;
    p.values[id].type = p.values[id].c.type;
  } else if (ElemType(ins[0]) != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
    Unsupported("Shape of a non-float32 tensor");
  }
  s->in = {id};
  s->out = {Out(p, outs.at(0), ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64)};
  p.steps.push_back(std::move(s));
}

const OpRegistrar kRegistrar({"Shape"}, LowerShape);

}  // namespace

}  // namespace onnxrl_ep
