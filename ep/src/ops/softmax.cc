// Softmax and LogSoftmax along one axis.
#include "../host.h"
#include "../lower_util.h"
#include "../cuda/device_args.h"
#include "../cuda/device_context.h"

namespace onnxrl_ep {

namespace {

struct SoftmaxKernel : Kernel {
  const char* Kind() const override { return "Softmax"; }

  void Infer(InferContext& c) const override {
    // The axis is checked where there is data (the CPU provider accepts any axis for an empty input).
    if (NumElements(c.in_shape(0)) > 0) c.NormAxis(axis, c.in_shape(0).size());
    c.set_shape(out[0], c.in_shape(0));
  }

  void Host(ExecContext& c) const override {
    const auto& a = c.shape(in[0]);
    if (NumElements(a) == 0) return;
    int64_t ax = NormAxis(axis, a.size(), node);
    int64_t outer = 1, len = 1, inner = 1;
    for (int64_t d = 0; d < static_cast<int64_t>(a.size()); d++) {
      if (legacy) {
        (d < ax ? outer : len) *= a[d];
      } else {
        (d < ax ? outer : d == ax ? len : inner) *= a[d];
      }
    }
    HostSoftmax(log, c.CF(in[0]), c.F(out[0]), outer, len, inner);
  }

  void Device(DeviceContext& c) const override {
    const auto& a = c.shape(in[0]);
    if (NumElements(a) == 0) return;
    int64_t ax = NormAxis(axis, a.size(), node);
    long long outer = 1, len = 1, inner = 1;
    for (int64_t d = 0; d < static_cast<int64_t>(a.size()); d++) {
      if (legacy) {
        (d < ax ? outer : len) *= a[d];
      } else {
        (d < ax ? outer : d == ax ? len : inner) *= a[d];
      }
    }
    cu::CUdeviceptr pi = c.ptr(in[0]), po = c.ptr(out[0]);
    int lg = log ? 1 : 0;
    c.Elementwise("onnxrl_softmax", outer * inner, {&pi, &po, &outer, &len, &inner, &lg});
  }

  bool log = false;     // LogSoftmax
  bool legacy = false;  // before opset 13: coerce to 2-D at axis
  int64_t axis = 0;
};

void LowerSoftmax(const OrtNode* n, Plan& p) {
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  auto s = std::make_unique<SoftmaxKernel>();
  s->node = NodeName(n);
  s->log = OpType(n) == "LogSoftmax";
  s->legacy = SinceVersion(n) < 13;
  s->axis = AttrInt(n, "axis", s->legacy ? 1 : -1);
  s->in = {In(p, ins.at(0))};
  s->out = {Out(p, outs.at(0))};
  p.steps.push_back(std::move(s));
}

const OpRegistrar kRegistrar({"Softmax", "LogSoftmax"}, LowerSoftmax);

}  // namespace

}  // namespace onnxrl_ep
