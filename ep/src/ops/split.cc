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
    int64_t kk = static_cast<int64_t>(k);
    if (sizes.empty()) {
      // Equal parts; from opset 18 the last ones may be smaller, before the dimension has to divide.
      if (a[ax] % kk != 0 && !uneven) {
        c.Fail("dimension " + std::to_string(a[ax]) + " does not split evenly in " + std::to_string(k));
      }
      int64_t each = a[ax] / kk + (a[ax] % kk != 0 ? 1 : 0);
      for (int64_t i = 0; i < kk; i++) sizes.push_back(std::clamp<int64_t>(a[ax] - each * i, 0, each));
    }
    int64_t total = 0;
    for (int64_t x : sizes)
      if (x < 0 || !CheckedAdd(total, x, &total)) c.Fail("split sizes " + ShapeString(sizes) + " are not sizes");
    if (sizes.size() != k || total != a[ax]) {
      c.Fail("split sizes " + ShapeString(sizes) + " do not add up to the dimension " + std::to_string(a[ax]));
    }
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
      if (chunk == 0) continue;  // an empty output
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
  bool uneven = false;         // opset 18: equal parts need not divide the dimension (the last ones are smaller)
};

void LowerSplit(const OrtNode* n, Plan& p) {
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  auto s = std::make_unique<SplitKernel>();
  s->node = NodeName(n);
  s->axis = AttrInt(n, "axis", 0);
  s->uneven = SinceVersion(n) >= 18;
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
