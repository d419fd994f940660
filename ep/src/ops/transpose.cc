// Transpose by a permutation (default: reversed dimensions).
#include "../host.h"
#include "../lower_util.h"
#include "../cuda/device_args.h"
#include "../cuda/device_context.h"

namespace onnxrl_ep {

namespace {

struct TransposeKernel : Kernel {
  const char* Kind() const override { return "Transpose"; }

  // From is the input dimension that output dimension d takes, of a rank-dimensional input.
  int64_t From(size_t d, size_t rank) const {
    return perm.empty() ? static_cast<int64_t>(rank - 1 - d) : perm.at(d);
  }

  void Infer(InferContext& c) const override {
    const auto& a = c.in_shape(0);
    if (!perm.empty()) {
      std::vector<bool> seen(a.size(), false);
      if (perm.size() != a.size()) c.Fail("perm's length differs from the input's rank");
      for (int64_t pd : perm) {
        if (pd < 0 || pd >= static_cast<int64_t>(a.size()) || seen[pd]) c.Fail("perm is not a permutation");
        seen[pd] = true;
      }
    }
    std::vector<int64_t> o(a.size());
    for (size_t d = 0; d < a.size(); d++) o[d] = a.at(From(d, a.size()));
    c.set_shape(out[0], std::move(o));
  }

  void Host(ExecContext& c) const override {
    const auto& a = c.shape(in[0]);
    auto st = Strides(a);
    int64_t strides[kMaxRank];
    for (size_t d = 0; d < a.size(); d++) strides[d] = st[From(d, a.size())];
    const auto& o = c.shape(out[0]);
    HostStridedCopy(c.CF(in[0]), 0, o.data(), strides, static_cast<int>(o.size()), c.F(out[0]));
  }

  void Device(DeviceContext& c) const override {
    const auto& a = c.shape(in[0]);
    auto st = Strides(a);
    devargs::Dims dims{}, strides{};
    for (size_t d = 0; d < a.size(); d++) strides.d[d] = st[From(d, a.size())];
    const auto& o = c.shape(out[0]);
    for (size_t d = 0; d < o.size(); d++) dims.d[d] = o[d];
    long long n = NumElements(o), base = 0;
    int rank = static_cast<int>(o.size());
    cu::CUdeviceptr pi = c.ptr(in[0]), po = c.ptr(out[0]);
    c.Elementwise("onnxrl_strided", n, {&pi, &base, &po, &n, &rank, &dims, &strides});
  }

  std::vector<int64_t> perm;  // empty: reversed
};

void LowerTranspose(const OrtNode* n, Plan& p) {
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  auto s = std::make_unique<TransposeKernel>();
  s->node = NodeName(n);
  if (auto perm = AttrInts(n, "perm")) s->perm = *perm;
  s->in = {In(p, ins.at(0))};
  s->out = {Out(p, outs.at(0))};
  p.steps.push_back(std::move(s));
}

const OpRegistrar kRegistrar({"Transpose"}, LowerTranspose);

}  // namespace

}  // namespace onnxrl_ep
