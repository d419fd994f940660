// Add, Sub, Mul, Div with broadcasting.
#include <algorithm>

#include "../lower_util.h"
#include "ops.h"
#include "../cuda/device_args.h"
#include "../cuda/device_context.h"

namespace onnxrl_ep {

namespace {

void LowerBinary(const OrtNode* n, Plan& p) {
  std::string op = OpType(n);
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  auto s = std::make_unique<BinaryKernel>();
  s->node = NodeName(n);
  s->op = op == "Add" ? kBinAdd : op == "Sub" ? kBinSub : op == "Mul" ? kBinMul : kBinDiv;
  int a = In(p, ins.at(0)), b = In(p, ins.at(1));
  s->in = {a, b};
  s->out = {Out(p, outs.at(0))};
  p.steps.push_back(std::move(s));
}

const OpRegistrar kRegistrar({"Add", "Sub", "Mul", "Div"}, LowerBinary);

}  // namespace

void BinaryKernel::Infer(InferContext& c) const {
  const auto& a = c.in_shape(0);
  const auto& b = c.in_shape(1);
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> o(rank);
  // aux: A's strides per output dimension, then B's (0 where broadcast).
  std::vector<int64_t>& st = c.aux();
  st.assign(2 * rank, 0);
  auto sta = Strides(a), stb = Strides(b);
  for (size_t d = 0; d < rank; d++) {
    int64_t da = d + a.size() >= rank ? a[d + a.size() - rank] : 1;
    int64_t db = d + b.size() >= rank ? b[d + b.size() - rank] : 1;
    if (da != db && da != 1 && db != 1) c.Fail("shapes do not broadcast");
    o[d] = da == 1 ? db : da;
    if (da != 1) st[d] = sta[d + a.size() - rank];
    if (db != 1) st[rank + d] = stb[d + b.size() - rank];
  }
  c.set_shape(out[0], std::move(o));
}

void BinaryKernel::Host(ExecContext& c) const {
  const auto& o = c.shape(out[0]);
  const auto& st = c.aux();
  HostBinary(op, c.CF(in[0]), c.CF(in[1]), c.F(out[0]), o.data(), st.data(), st.data() + o.size(),
             static_cast<int>(o.size()));
}

void BinaryKernel::Device(DeviceContext& c) const {
  const auto& o = c.shape(out[0]);
  const auto& st = c.aux();  // A's strides, then B's
  int rank = static_cast<int>(o.size());
  devargs::Dims dims{}, sa{}, sb{};
  for (int d = 0; d < rank; d++) {
    dims.d[d] = o[d];
    sa.d[d] = st[d];
    sb.d[d] = st[rank + d];
  }
  long long n = NumElements(o);
  cu::CUdeviceptr pa = c.ptr(in[0]), pb = c.ptr(in[1]), po = c.ptr(out[0]);
  int code = op;
  c.Elementwise("onnxrl_binary", n, {&pa, &pb, &po, &n, &rank, &code, &dims, &sa, &sb});
}


}  // namespace onnxrl_ep
