// Concat along one axis.
#include <cstring>

#include "../lower_util.h"
#include "../cuda/device_args.h"
#include "../cuda/device_context.h"

namespace onnxrl_ep {

namespace {

struct ConcatKernel : Kernel {
  const char* Kind() const override { return "Concat"; }

  void Infer(InferContext& c) const override {
    auto o = c.in_shape(0);
    int64_t ax = c.NormAxis(axis, o.size());
    o[ax] = 0;
    for (size_t i = 0; i < in.size(); i++) {
      const auto& x = c.in_shape(i);
      if (x.size() != o.size()) c.Fail("inputs differ in rank");
      for (size_t d = 0; d < o.size(); d++)
        if (static_cast<int64_t>(d) != ax && x[d] != o[d]) c.Fail("inputs differ outside the axis");
      o[ax] += x[ax];
    }
    c.set_shape(out[0], std::move(o));
  }

  void Host(ExecContext& c) const override {
    const auto& o = c.shape(out[0]);
    int64_t ax = NormAxis(axis, o.size(), node);
    auto [outer, inner] = OuterInner(o, ax);
    float* y = c.F(out[0]);
    int64_t orow = o[ax] * inner, off = 0;
    for (int v : in) {
      int64_t chunk = c.shape(v)[ax] * inner;
      const float* x = c.CF(v);
      for (int64_t i = 0; i < outer; i++) std::memcpy(y + i * orow + off, x + i * chunk, chunk * sizeof(float));
      off += chunk;
    }
  }

  void Device(DeviceContext& c) const override {
    const auto& o = c.shape(out[0]);
    int64_t ax = NormAxis(axis, o.size(), node);
    auto [outer, inner] = OuterInner(o, ax);
    long long orow = o[ax] * inner, off = 0, rows = outer;
    for (int v : in) {
      long long chunk = c.shape(v)[ax] * inner;
      cu::CUdeviceptr src = c.ptr(v), dst = c.ptr(out[0]) + static_cast<cu::CUdeviceptr>(off * sizeof(float));
      c.Elementwise("onnxrl_copy2d", rows * chunk, {&src, &chunk, &dst, &orow, &rows, &chunk});
      off += chunk;
    }
  }

  int64_t axis = 0;
};

void LowerConcat(const OrtNode* n, Plan& p) {
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  auto s = std::make_unique<ConcatKernel>();
  s->node = NodeName(n);
  s->axis = AttrInt(n, "axis", 0);
  for (auto* v : ins) s->in.push_back(In(p, v));
  s->out = {Out(p, outs.at(0))};
  p.steps.push_back(std::move(s));
}

const OpRegistrar kRegistrar({"Concat"}, LowerConcat);

}  // namespace

}  // namespace onnxrl_ep
