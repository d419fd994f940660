// Pad, constant mode: constant pads (an attribute before opset 11, a constant input since) and
// a constant fill value. Refused: the reflect, edge and wrap modes, an axes input.
#include "../lower_util.h"
#include "nn.h"
#include "../cuda/device_args.h"
#include "../cuda/device_context.h"

namespace onnxrl_ep {

namespace {

void LowerPad(const OrtNode* n, Plan& p) {
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  std::string mode = AttrString(n, "mode", "constant");
  if (mode != "constant") Unsupported("mode " + mode + " (only constant)");
  auto s = std::make_unique<PadKernel>();
  s->node = NodeName(n);
  if (SinceVersion(n) < 11) {
    if (auto pads = AttrInts(n, "pads")) s->pads = *pads;
    s->value = AttrFloat(n, "value", 0.0f);
  } else {
    if (!Present(ins, 1)) Unsupported("no pads");
    s->pads = Ints(Param(ins[1], "pads"), "pads");
    if (Present(ins, 2)) s->value = ScalarParam(ins[2], "constant_value");
    if (Present(ins, 3)) Unsupported("an axes input");
  }
  s->in = {In(p, ins.at(0))};
  s->out = {Out(p, outs.at(0))};
  p.steps.push_back(std::move(s));
}

const OpRegistrar kRegistrar({"Pad"}, LowerPad);

}  // namespace

void PadKernel::Infer(InferContext& c) const {
  const auto& x = c.in_shape(0);
  if (pads.size() != 2 * x.size()) c.Fail("pads are not two per dimension");
  std::vector<int64_t> o(x.size());
  for (size_t d = 0; d < x.size(); d++) {
    if (!CheckedAdd(x[d], pads[d], &o[d]) || !CheckedAdd(o[d], pads[x.size() + d], &o[d])) {
      c.Fail("pads overflow the dimension");
    }
    if (o[d] < 0) c.Fail("pads crop more than the dimension holds");
  }
  c.set_shape(out[0], std::move(o));
}

void PadKernel::Host(ExecContext& c) const {
  const auto& x = c.shape(in[0]);
  const auto& y = c.shape(out[0]);
  const int rank = static_cast<int>(y.size());
  const int64_t n = NumElements(y);
  if (n == 0) return;
  auto st = Strides(x);
  const float* px = c.CF(in[0]);
  float* py = c.F(out[0]);
  // The innermost dimension as a row: fill, then copy the input's part of it.
  const int64_t inner = rank > 0 ? y[rank - 1] : 1;
  const int64_t b = rank > 0 ? pads[rank - 1] : 0;
  const int64_t iw = rank > 0 ? x[rank - 1] : 1;
  int64_t idx[kMaxRank] = {0};
  for (int64_t o = 0; o < n; o += inner) {
    float* row = py + o;
    bool inside = true;
    int64_t off = 0;
    for (int d = 0; d + 1 < rank; d++) {
      int64_t i = idx[d] - pads[d];
      inside = inside && i >= 0 && i < x[d];
      off += i * st[d];
    }
    for (int64_t j = 0; j < inner; j++) {
      int64_t i = j - b;
      row[j] = inside && i >= 0 && i < iw ? px[off + i] : value;
    }
    for (int d = rank - 2; d >= 0; d--) {
      if (++idx[d] < y[d]) break;
      idx[d] = 0;
    }
  }
}

void PadKernel::Device(DeviceContext& c) const {
  const auto& x = c.shape(in[0]);
  const auto& y = c.shape(out[0]);
  int rank = static_cast<int>(y.size());
  devargs::Dims odims{}, idims{}, begin{};
  for (int d = 0; d < rank; d++) {
    odims.d[d] = y[d];
    idims.d[d] = x[d];
    begin.d[d] = pads[d];
  }
  long long n = NumElements(y);
  float v = value;
  cu::CUdeviceptr px = c.ptr(in[0]), py = c.ptr(out[0]);
  c.Elementwise("onnxrl_pad", n, {&px, &py, &n, &rank, &odims, &idims, &begin, &v});
}

}  // namespace onnxrl_ep
