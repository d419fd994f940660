// Slice with constant starts, ends, axes and steps.
#include <algorithm>

#include "../host.h"
#include "../lower_util.h"
#include "../cuda/device_args.h"
#include "../cuda/device_context.h"

namespace onnxrl_ep {

namespace {

struct SliceKernel : Kernel {
  const char* Kind() const override { return "Slice"; }

  void Infer(InferContext& c) const override {
    auto o = c.in_shape(0);
    for (size_t i = 0; i < starts.size(); i++) {
      int64_t ax = c.NormAxis(axes[i], o.size());
      int64_t dim = c.in_shape(0)[ax], st = steps[i];
      int64_t b = starts[i], e = ends[i];
      if (b < 0) b += dim;
      if (e < 0) e += dim;
      if (st > 0) {
        b = std::clamp<int64_t>(b, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
        o[ax] = e > b ? (e - b + st - 1) / st : 0;
      } else {
        b = std::clamp<int64_t>(b, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
        o[ax] = b > e ? (b - e - st - 1) / (-st) : 0;
      }
    }
    c.set_shape(out[0], std::move(o));
  }

  void Host(ExecContext& c) const override {
    const auto& a = c.shape(in[0]);
    auto st = Strides(a);
    int64_t strides[kMaxRank];
    for (size_t d = 0; d < a.size(); d++) strides[d] = st[d];
    int64_t base = 0;
    for (size_t i = 0; i < starts.size(); i++) {
      int64_t ax = NormAxis(axes[i], a.size(), node);
      int64_t dim = a[ax], b = starts[i];
      if (b < 0) b += dim;
      b = steps[i] > 0 ? std::clamp<int64_t>(b, 0, dim) : std::clamp<int64_t>(b, 0, dim - 1);
      base += b * st[ax];
      strides[ax] = st[ax] * steps[i];
    }
    const auto& o = c.shape(out[0]);
    if (NumElements(o) > 0)
      HostStridedCopy(c.CF(in[0]), base, o.data(), strides, static_cast<int>(o.size()), c.F(out[0]));
  }

  void Device(DeviceContext& c) const override {
    const auto& a = c.shape(in[0]);
    auto st = Strides(a);
    devargs::Dims dims{}, strides{};
    for (size_t d = 0; d < a.size(); d++) strides.d[d] = st[d];
    long long base = 0;
    for (size_t i = 0; i < starts.size(); i++) {
      int64_t ax = NormAxis(axes[i], a.size(), node);
      int64_t dim = a[ax], b = starts[i];
      if (b < 0) b += dim;
      b = steps[i] > 0 ? std::clamp<int64_t>(b, 0, dim) : std::clamp<int64_t>(b, 0, dim - 1);
      base += b * st[ax];
      strides.d[ax] = st[ax] * steps[i];
    }
    const auto& o = c.shape(out[0]);
    for (size_t d = 0; d < o.size(); d++) dims.d[d] = o[d];
    long long n = NumElements(o);
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
