// ReduceMean over constant axes: the axes attribute (before opset 18) or a constant axes input
// (opset 18), keepdims, noop_with_empty_axes.
#include <algorithm>

#include "../lower_util.h"
#include "nn.h"
#include "../cuda/device_args.h"
#include "../cuda/device_context.h"

namespace onnxrl_ep {

namespace {

void LowerReduceMean(const OrtNode* n, Plan& p) {
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  auto s = std::make_unique<ReduceMeanKernel>();
  s->node = NodeName(n);
  s->keepdims = AttrInt(n, "keepdims", 1) != 0;
  if (SinceVersion(n) >= 18) {
    if (Present(ins, 1)) s->axes = Ints(Param(ins[1], "axes"), "axes");
    s->noop = s->axes.empty() && AttrInt(n, "noop_with_empty_axes", 0) != 0;
  } else if (auto a = AttrInts(n, "axes")) {
    s->axes = *a;
  }
  s->in = {In(p, ins.at(0))};
  s->out = {Out(p, outs.at(0))};
  p.steps.push_back(std::move(s));
}

const OpRegistrar kRegistrar({"ReduceMean"}, LowerReduceMean);

}  // namespace

void ReduceMeanKernel::Infer(InferContext& c) const {
  const auto& x = c.in_shape(0);
  const size_t rank = x.size();
  std::vector<bool> reduced(rank, axes.empty() && !noop);
  for (int64_t a : axes) {
    int64_t ax = c.NormAxis(a, rank);
    if (reduced[ax]) c.Fail("axis " + std::to_string(a) + " given twice");
    reduced[ax] = true;
  }
  // aux: the output's dims with the reduced ones as 1, then the input's.
  std::vector<int64_t>& aux = c.aux();
  aux.assign(2 * rank, 0);
  std::vector<int64_t> o;
  for (size_t d = 0; d < rank; d++) {
    aux[d] = reduced[d] ? 1 : x[d];
    aux[rank + d] = x[d];
    if (!reduced[d] || keepdims) o.push_back(aux[d]);
    if (reduced[d] && x[d] == 0) c.Fail("the mean of an empty axis");
  }
  c.set_shape(out[0], std::move(o));
}

void ReduceMeanKernel::Host(ExecContext& c) const {
  const auto& aux = c.aux();
  const size_t rank = aux.size() / 2;
  const int64_t* od = aux.data();
  const int64_t* id = aux.data() + rank;
  const float* px = c.CF(in[0]);
  float* py = c.F(out[0]);
  int64_t n_in = 1, n_out = 1;
  for (size_t d = 0; d < rank; d++) {
    n_in *= id[d];
    n_out *= od[d];
  }
  if (n_out == 0) return;
  const double count = static_cast<double>(n_in / n_out);
  // One contiguous block of reduced dimensions: [outer, len, inner].
  size_t first = rank, last = 0;
  for (size_t d = 0; d < rank; d++)
    if (od[d] != id[d]) {
      first = std::min(first, d);
      last = d;
    }
  bool block = true;  // dimensions of 1 between reduced ones do not break the block
  for (size_t d = first; d <= last && d < rank; d++) block = block && (od[d] == 1 || id[d] == 1);
  if (first == rank) {  // nothing reduced (or only dimensions of 1)
    std::copy(px, px + n_in, py);
    return;
  }
  if (block) {
    int64_t outer = 1, len = 1, inner = 1;
    for (size_t d = 0; d < rank; d++) (d < first ? outer : d <= last ? len : inner) *= id[d];
    for (int64_t o = 0; o < outer; o++) {
      const float* x = px + o * len * inner;
      float* y = py + o * inner;
      if (inner == 1) {
        double sum = 0;
        for (int64_t i = 0; i < len; i++) sum += x[i];
        y[0] = static_cast<float>(sum / count);
        continue;
      }
      for (int64_t j = 0; j < inner; j++) {
        double sum = 0;
        for (int64_t i = 0; i < len; i++) sum += x[i * inner + j];
        y[j] = static_cast<float>(sum / count);
      }
    }
    return;
  }
  // Reduced dimensions apart: every input element added into its output element (strides 0 on
  // the reduced dimensions), over the input's odometer.
  std::vector<int64_t> ost(rank), idx(rank, 0);
  int64_t acc = 1;
  for (size_t d = rank; d-- > 0;) {
    ost[d] = od[d] == 1 ? 0 : acc;
    acc *= od[d];
  }
  std::vector<double> sums(n_out, 0.0);
  int64_t off = 0;
  for (int64_t i = 0; i < n_in; i++) {
    sums[off] += px[i];
    for (size_t d = rank; d-- > 0;) {
      idx[d]++;
      off += ost[d];
      if (idx[d] < id[d]) break;
      off -= ost[d] * id[d];
      idx[d] = 0;
    }
  }
  for (int64_t o = 0; o < n_out; o++) py[o] = static_cast<float>(sums[o] / count);
}

void ReduceMeanKernel::Device(DeviceContext& c) const {
  const auto& aux = c.aux();
  int rank = static_cast<int>(aux.size() / 2);
  devargs::Dims odims{}, rdims{}, istr{};
  auto st = Strides(std::vector<int64_t>(aux.begin() + rank, aux.end()));
  long long count = 1;
  for (int d = 0; d < rank; d++) {
    odims.d[d] = aux[d];
    rdims.d[d] = aux[d] == aux[rank + d] ? 1 : aux[rank + d];
    istr.d[d] = st[d];
    count *= rdims.d[d];
  }
  long long n = NumElements(c.shape(out[0]));
  cu::CUdeviceptr px = c.ptr(in[0]), py = c.ptr(out[0]);
  c.Elementwise("onnxrl_reduce_mean", n, {&px, &py, &n, &rank, &count, &odims, &rdims, &istr});
}

}  // namespace onnxrl_ep
