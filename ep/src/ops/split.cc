// Split along one axis, into given sizes or equal parts.
#include <algorithm>
#include <cstring>

#include "../lower_util.h"
#include "../cuda/device_args.h"
#include "../cuda/device_context.h"

namespace onnxrl_ep {

namespace {

struct SplitKernel : Kernel {
  const char* Kind() const override { return "Split"; }

  void Infer(InferContext& c) const override {
    const auto& a = c.in_shape(0);
    int64_t ax = c.NormAxis(axis, a.size());
    size_t k = out.size();
    std::vector<int64_t> sizes = split;
    if (sizes.empty()) {
      int64_t each = (a[ax] + static_cast<int64_t>(k) - 1) / static_cast<int64_t>(k);
      for (size_t i = 0; i < k; i++) sizes.push_back(std::min<int64_t>(each, a[ax] - each * static_cast<int64_t>(i)));
    }
    int64_t total = 0;
    for (int64_t x : sizes) total += x;
    if (sizes.size() != k || total != a[ax]) c.Fail("split sizes do not add up to the dimension");
    for (size_t i = 0; i < k; i++) {
      auto o = a;
      o[ax] = sizes[i];
      c.set_shape(out[i], std::move(o));
    }
  }

  void Host(ExecContext& c) const override {
    const auto& a = c.shape(in[0]);
    int64_t ax = NormAxis(axis, a.size(), node);
    auto [outer, inner] = OuterInner(a, ax);
    const float* x = c.CF(in[0]);
    int64_t row = a[ax] * inner, off = 0;
    for (int v : out) {
      int64_t chunk = c.shape(v)[ax] * inner;
      float* y = c.F(v);
      for (int64_t i = 0; i < outer; i++) std::memcpy(y + i * chunk, x + i * row + off, chunk * sizeof(float));
      off += chunk;
    }
  }

  void Device(DeviceContext& c) const override {
    const auto& a = c.shape(in[0]);
    int64_t ax = NormAxis(axis, a.size(), node);
    auto [outer, inner] = OuterInner(a, ax);
    long long row = a[ax] * inner, off = 0, rows = outer;
    for (int v : out) {
      long long chunk = c.shape(v)[ax] * inner;
      cu::CUdeviceptr src = c.ptr(in[0]) + static_cast<cu::CUdeviceptr>(off * sizeof(float)), dst = c.ptr(v);
      c.Elementwise("onnxrl_copy2d", rows * chunk, {&src, &row, &dst, &chunk, &rows, &chunk});
      off += chunk;
    }
  }

  int64_t axis = 0;
  std::vector<int64_t> split;  // sizes; empty: equal parts
};

void LowerSplit(const OrtNode* n, Plan& p) {
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  auto s = std::make_unique<SplitKernel>();
  s->node = NodeName(n);
  s->axis = AttrInt(n, "axis", 0);
  if (SinceVersion(n) >= 13) {
    if (Present(ins, 1)) s->split = Ints(Param(ins[1], "split"), "split");
  } else if (auto sp = AttrInts(n, "split")) {
    s->split = *sp;
  }
  s->in = {In(p, ins.at(0))};
  for (auto* v : outs) {
    int id = Out(p, v);
    if (id < 0) Unsupported("a missing Split output");
    s->out.push_back(id);
  }
  p.steps.push_back(std::move(s));
}

const OpRegistrar kRegistrar({"Split"}, LowerSplit);

}  // namespace

}  // namespace onnxrl_ep
