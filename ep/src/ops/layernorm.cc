// LayerNormalization (opset 17): axis, epsilon, a constant scale and an optional constant bias
// of the normalized dimensions' shape. Refused: the Mean and InvStdDev outputs, stash_type other
// than float32.
#include <algorithm>
#include <cmath>

#include "../lower_util.h"
#include "nn.h"
#include "ops.h"
#include "../gemm.h"
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
  const float* sc = scale.data();
  const float* bi = bias.empty() ? nullptr : bias.data();
  Epilogue e;
  e.act = act;
  e.a = a;
  e.b = b;
  // Rows over the session's threads: about 8 operations per element.
  c.ParallelRows(rows, 8 * len, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      NormalizeRow(px + r * len, len, epsilon, sc, bi, py + r * len);
      if (act != kActNone) Activations(e, py + r * len, py + r * len, len);
    }
  });
}

void LayerNormKernel::Device(DeviceContext& c) const {
  long long len = static_cast<long long>(scale.size());
  long long rows = len == 0 ? 0 : NumElements(c.shape(in[0])) / len;
  cu::CUdeviceptr px = c.ptr(in[0]), ps = c.Resident(scale), pb = c.Resident(bias), py = c.ptr(out[0]);
  float eps = epsilon;
  c.Elementwise("onnxrl_layernorm", rows, {&px, &ps, &pb, &py, &rows, &len, &eps});
  if (act != kActNone) {
    long long n = rows * len;
    int code = act;
    float pa = a, pb2 = b;
    c.Elementwise("onnxrl_unary", n, {&py, &py, &n, &code, &pa, &pb2});
  }
}

bool FuseIntoLayerNorm(Plan& p) {
  for (size_t i = 0; i < p.steps.size(); i++) {
    auto* ln = dynamic_cast<LayerNormKernel*>(p.steps[i].get());
    if (ln == nullptr || ln->act != kActNone || p.values[ln->out[0]].output >= 0) continue;
    size_t readers = 0, at = 0;
    for (size_t j = 0; j < p.steps.size(); j++)
      for (int x : p.steps[j]->in)
        if (x == ln->out[0]) {
          readers++;
          at = j;
        }
    if (readers != 1) continue;
    auto* u = dynamic_cast<UnaryKernel*>(p.steps[at].get());
    if (u == nullptr) continue;
    ln->act = u->act;
    ln->a = u->a;
    ln->b = u->b;
    ln->out = u->out;
    p.steps.erase(p.steps.begin() + at);
    return true;
  }
  return false;
}

}  // namespace onnxrl_ep
