// LayerNormalization (opset 17): axis, epsilon, a constant scale and an optional constant bias
// of the normalized dimensions' shape. Refused: the Mean and InvStdDev outputs, stash_type other
// than float32.
#include <cmath>

#include "../lower_util.h"
#include "nn.h"
#include "../cuda/device_args.h"
#include "../cuda/device_context.h"

namespace onnxrl_ep {

namespace {

void LowerLayerNorm(const OrtNode* n, Plan& p) {
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  if (Present(outs, 1) || Present(outs, 2)) Unsupported("the Mean or InvStdDev output");
  if (AttrInt(n, "stash_type", 1) != 1) Unsupported("stash_type other than float32");
  if (ins.size() < 2) Unsupported("no scale");
  auto sh = Shape(ins[0]);
  if (!sh) Unsupported("an input of unknown rank");
  auto s = std::make_unique<LayerNormKernel>();
  s->node = NodeName(n);
  s->axis = AttrInt(n, "axis", -1);
  s->epsilon = AttrFloat(n, "epsilon", 1e-5f);
  const int64_t rank = static_cast<int64_t>(sh->size());
  if (s->axis < -rank || s->axis >= rank) Unsupported("axis out of range");
  const int64_t ax = s->axis < 0 ? s->axis + rank : s->axis;
  // The scale and bias must have the normalized dimensions' shape (no broadcasting within a row).
  auto read = [&](const OrtValueInfo* v, const char* what) {
    ConstTensor t = Param(v, what);
    if (t.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) Unsupported(std::string(what) + " is not float32");
    bool ok = static_cast<int64_t>(t.shape.size()) == rank - ax;
    for (int64_t d = ax; ok && d < rank; d++) ok = (*sh)[d] < 0 || t.shape[d - ax] == (*sh)[d];
    if (!ok) Unsupported(std::string(what) + " does not have the normalized dimensions' shape");
    return t.f;
  };
  s->scale = read(ins[1], "scale");
  if (Present(ins, 2)) s->bias = read(ins[2], "bias");
  s->in = {In(p, ins[0])};
  s->out = {Out(p, outs.at(0))};
  p.steps.push_back(std::move(s));
}

const OpRegistrar kRegistrar({"LayerNormalization"}, LowerLayerNorm);

}  // namespace

void LayerNormKernel::Infer(InferContext& c) const {
  const auto& x = c.in_shape(0);
  int64_t ax = c.NormAxis(axis, x.size());
  int64_t len = 1;
  for (size_t d = ax; d < x.size(); d++) len *= x[d];
  if (len != static_cast<int64_t>(scale.size())) c.Fail("the normalized dimensions do not match the scale's");
  c.set_shape(out[0], x);
}

void LayerNormKernel::Host(ExecContext& c) const {
  const int64_t len = static_cast<int64_t>(scale.size());
  const int64_t rows = len == 0 ? 0 : NumElements(c.shape(in[0])) / len;
  const float* px = c.CF(in[0]);
  float* py = c.F(out[0]);
  const float* b = bias.empty() ? nullptr : bias.data();
  for (int64_t r = 0; r < rows; r++) {
    const float* x = px + r * len;
    float* y = py + r * len;
    double sum = 0;
    for (int64_t i = 0; i < len; i++) sum += x[i];
    const double mean = sum / static_cast<double>(len);
    double sq = 0;
    for (int64_t i = 0; i < len; i++) sq += (x[i] - mean) * (x[i] - mean);
    const float m = static_cast<float>(mean);
    const float inv = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(len) + epsilon));
    for (int64_t i = 0; i < len; i++) y[i] = (x[i] - m) * inv * scale[i] + (b ? b[i] : 0.0f);
  }
}

void LayerNormKernel::Device(DeviceContext& c) const {
  long long len = static_cast<long long>(scale.size());
  long long rows = len == 0 ? 0 : NumElements(c.shape(in[0])) / len;
  cu::CUdeviceptr px = c.ptr(in[0]), ps = c.Resident(scale), pb = c.Resident(bias), py = c.ptr(out[0]);
  float eps = epsilon;
  c.Elementwise("onnxrl_layernorm", rows, {&px, &ps, &pb, &py, &rows, &len, &eps});
}

}  // namespace onnxrl_ep
