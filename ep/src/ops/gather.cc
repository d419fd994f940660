// Gather with constant indices.
#include <cstring>

#include "../lower_util.h"
#include "../cuda/device_args.h"
#include "../cuda/device_context.h"

namespace onnxrl_ep {

namespace {

struct GatherKernel : Kernel {
  const char* Kind() const override { return "Gather"; }

  void Infer(InferContext& c) const override {
    const auto& a = c.in_shape(0);
    int64_t ax = c.NormAxis(axis, a.size());
    for (int64_t i : indices)
      if (i < -a[ax] || i >= a[ax]) {
        c.Fail("index " + std::to_string(i) + " out of range for " + ShapeString(a) + " on axis " +
               std::to_string(ax));
      }
    std::vector<int64_t> o(a.begin(), a.begin() + ax);
    o.insert(o.end(), idx_shape.begin(), idx_shape.end());
    o.insert(o.end(), a.begin() + ax + 1, a.end());
    c.set_shape(out[0], std::move(o));
  }

  void Host(ExecContext& c) const override {
    const auto& a = c.shape(in[0]);
    int64_t ax = NormAxis(axis, a.size(), node);
    auto [outer, inner] = OuterInner(a, ax);
    const float* x = c.CF(in[0]);
    float* y = c.F(out[0]);
    int64_t nidx = static_cast<int64_t>(indices.size());
    if (NumElements(c.shape(out[0])) == 0) return;
    for (int64_t i = 0; i < outer; i++)
      for (int64_t j = 0; j < nidx; j++) {
        int64_t k = indices[j] < 0 ? indices[j] + a[ax] : indices[j];
        std::memcpy(y + (i * nidx + j) * inner, x + (i * a[ax] + k) * inner, inner * sizeof(float));
      }
  }

  void Device(DeviceContext& c) const override {
    const auto& a = c.shape(in[0]);
    int64_t ax = NormAxis(axis, a.size(), node);
    auto [outer, inner] = OuterInner(a, ax);
    long long nidx = static_cast<long long>(indices.size());
    long long spitch = a[ax] * inner, dpitch = nidx * inner, rows = outer, cols = inner;
    for (long long j = 0; j < nidx; j++) {
      int64_t k = indices[j] < 0 ? indices[j] + a[ax] : indices[j];
      cu::CUdeviceptr src = c.ptr(in[0]) + static_cast<cu::CUdeviceptr>(k * inner * sizeof(float));
      cu::CUdeviceptr dst = c.ptr(out[0]) + static_cast<cu::CUdeviceptr>(j * inner * sizeof(float));
      c.Elementwise("onnxrl_copy2d", rows * cols, {&src, &spitch, &dst, &dpitch, &rows, &cols});
    }
  }

  int64_t axis = 0;
  std::vector<int64_t> indices, idx_shape;
};

void LowerGather(const OrtNode* n, Plan& p) {
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  auto s = std::make_unique<GatherKernel>();
  s->node = NodeName(n);
  s->axis = AttrInt(n, "axis", 0);
  ConstTensor idx = Param(ins.at(1), "Gather indices");
  s->indices = Ints(idx, "Gather indices");
  s->idx_shape = idx.shape;
  // Where the data's dimension is known, an index out of range is the CPU provider's error to report.
  if (auto sh = Shape(ins.at(0)); sh && !sh->empty()) {
    int64_t rank = static_cast<int64_t>(sh->size());
    if (s->axis < -rank || s->axis >= rank) Unsupported("axis " + std::to_string(s->axis) + " out of range");
    int64_t dim = (*sh)[s->axis < 0 ? s->axis + rank : s->axis];
    for (int64_t i : s->indices)
      if (dim >= 0 && (i < -dim || i >= dim)) {
        Unsupported("index " + std::to_string(i) + " out of range for a dimension of " + std::to_string(dim));
      }
  }
  s->in = {In(p, ins.at(0))};
  s->out = {Out(p, outs.at(0))};
  p.steps.push_back(std::move(s));
}

const OpRegistrar kRegistrar({"Gather"}, LowerGather);

}  // namespace

}  // namespace onnxrl_ep
