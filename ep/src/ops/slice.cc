// Slice with constant starts, ends, axes and steps.
#include <algorithm>
#include <cstdint>

#include "../host.h"
#include "../lower_util.h"
#include "../cuda/device_args.h"
#include "../cuda/device_context.h"

namespace onnxrl_ep {

namespace {

struct SliceKernel : Kernel {
  const char* Kind() const override { return "Slice"; }

  // Range is the first index and the count that slice i takes of a dimension of size dim
  // (ONNX's clamping; any starts, ends and non-zero steps, without overflow).
  std::pair<int64_t, int64_t> Range(size_t i, int64_t dim) const {
    int64_t b = starts[i], e = ends[i], st = steps[i];
    if (dim == 0) return {0, 0};
    if (b < 0) b += dim;
    if (e == INT32_MAX || e == INT64_MAX) {
      e = st < 0 ? -1 : dim;  // "to the end" in the step's direction, as the CPU provider reads it
    } else if (e < 0) {
      e += dim;
    }
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      return {b, e > b ? (e - b - 1) / st + 1 : 0};
    }
    b = std::clamp<int64_t>(b, 0, dim - 1);
    e = std::clamp<int64_t>(e, -1, dim - 1);
    uint64_t mag = 0 - static_cast<uint64_t>(st);  // -st, INT64_MIN included
    return {b, b > e ? static_cast<int64_t>(static_cast<uint64_t>(b - e - 1) / mag) + 1 : 0};
  }

  void Infer(InferContext& c) const override {
    const auto& a = c.in_shape(0);
    auto o = a;
    std::vector<bool> seen(a.size(), false);
    for (size_t i = 0; i < starts.size(); i++) {
      int64_t ax = c.NormAxis(axes[i], a.size());
      if (seen[ax]) c.Fail("axis " + std::to_string(axes[i]) + " sliced twice");
      seen[ax] = true;
      o[ax] = Range(i, a[ax]).second;
    }
    c.set_shape(out[0], std::move(o));
  }

  // Offsets sets the input's element offset of the output's first element and the input's
  // element stride per output dimension.
  void Offsets(const std::vector<int64_t>& a, const std::vector<int64_t>& o, int64_t& base, int64_t* strides) const {
    auto st = Strides(a);
    for (size_t d = 0; d < a.size(); d++) strides[d] = st[d];
    base = 0;
    for (size_t i = 0; i < starts.size(); i++) {
      int64_t ax = NormAxis(axes[i], a.size(), node);
      // Within the input (the output is not empty): the products stay below its element count.
      base += Range(i, a[ax]).first * st[ax];
      strides[ax] = o[ax] > 1 ? st[ax] * steps[i] : 0;
    }
  }

  void Host(ExecContext& c) const override {
    const auto& a = c.shape(in[0]);
    const auto& o = c.shape(out[0]);
    if (NumElements(o) == 0) return;
    int64_t base = 0, strides[kMaxRank];
    Offsets(a, o, base, strides);
    HostStridedCopy(c.CF(in[0]), base, o.data(), strides, static_cast<int>(o.size()), c.F(out[0]));
  }

  void Device(DeviceContext& c) const override {
    const auto& a = c.shape(in[0]);
    const auto& o = c.shape(out[0]);
    long long n = NumElements(o);
    if (n == 0) return;
    int64_t b = 0, st[kMaxRank];
    Offsets(a, o, b, st);
    devargs::Dims dims{}, strides{};
    for (size_t d = 0; d < o.size(); d++) {
      dims.d[d] = o[d];
      strides.d[d] = st[d];
    }
    long long base = b;
    int rank = static_cast<int>(o.size());
    cu::CUdeviceptr pi = c.ptr(in[0]), po = c.ptr(out[0]);
    c.Elementwise("onnxrl_strided", n, {&pi, &base, &po, &n, &rank, &dims, &strides});
  }

  std::vector<int64_t> starts, ends, axes, steps;  // one per sliced axis
};

void LowerSlice(const OrtNode* n, Plan& p) {
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  auto s = std::make_unique<SliceKernel>();
  s->node = NodeName(n);
  if (SinceVersion(n) < 10) {
    s->starts = AttrInts(n, "starts").value_or(std::vector<int64_t>{});
    s->ends = AttrInts(n, "ends").value_or(std::vector<int64_t>{});
    s->axes = AttrInts(n, "axes").value_or(std::vector<int64_t>{});
  } else {
    s->starts = Ints(Param(ins.at(1), "starts"), "starts");
    s->ends = Ints(Param(ins.at(2), "ends"), "ends");
    if (Present(ins, 3)) s->axes = Ints(Param(ins[3], "axes"), "axes");
    if (Present(ins, 4)) s->steps = Ints(Param(ins[4], "steps"), "steps");
  }
  if (s->starts.size() != s->ends.size()) Unsupported("starts and ends differ in length");
  if (s->axes.empty())
    for (size_t i = 0; i < s->starts.size(); i++) s->axes.push_back(static_cast<int64_t>(i));
  if (s->steps.empty()) s->steps.assign(s->starts.size(), 1);
  if (s->axes.size() != s->starts.size() || s->steps.size() != s->starts.size()) Unsupported("axes or steps differ in length from starts");
  for (int64_t st : s->steps)
    if (st == 0) Unsupported("a zero step");
  s->in = {In(p, ins.at(0))};
  s->out = {Out(p, outs.at(0))};
  p.steps.push_back(std::move(s));
}

const OpRegistrar kRegistrar({"Slice"}, LowerSlice);

}  // namespace

}  // namespace onnxrl_ep
