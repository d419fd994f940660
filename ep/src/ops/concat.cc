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
    // Like the CPU provider, an empty input may differ from the others outside the axis when
    // it adds nothing along it (the CPU provider would add rows of undefined values otherwise).
    size_t ref = 0;  // the first non-empty input, else the first
    while (ref < in.size() && NumElements(c.in_shape(ref)) == 0) ref++;
    if (ref == in.size()) ref = 0;
    auto o = c.in_shape(ref);
    int64_t ax = c.NormAxis(axis, o.size());
    o[ax] = 0;
    for (size_t i = 0; i < in.size(); i++) {
      const auto& x = c.in_shape(i);
      bool same = x.size() == o.size();
      for (size_t d = 0; same && d < o.size(); d++) same = static_cast<int64_t>(d) == ax || x[d] == o[d];
      if (!same && NumElements(x) == 0) {
        if (x.size() <= static_cast<size_t>(ax) || x[ax] == 0) continue;
        c.Fail("an empty input " + ShapeString(x) + " differs from " + ShapeString(c.in_shape(ref)) +
               " outside the axis and adds to it");
      }
      if (x.size() != o.size()) c.Fail("inputs differ in rank");
      if (!same) c.Fail("inputs differ outside the axis");
      if (!CheckedAdd(o[ax], x[ax], &o[ax])) c.Fail("the concatenated dimension overflows");
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
      if (NumElements(c.shape(v)) == 0) continue;  // an empty input adds nothing (its shape may differ)
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
      if (NumElements(c.shape(v)) == 0) continue;  // an empty input adds nothing (its shape may differ)
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
