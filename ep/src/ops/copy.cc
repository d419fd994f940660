// Identity, Reshape, Flatten, Squeeze, Unsqueeze: the same data under a new shape. Each has its
// own shape inference; all copy alike.
#include <cstring>

#include "../lower_util.h"
#include "../cuda/device_args.h"
#include "../cuda/device_context.h"

namespace onnxrl_ep {

namespace {

struct CopyKernel : Kernel {
  const char* Kind() const override { return "Copy"; }

  void Host(ExecContext& c) const override {
    size_t bytes = NumElements(c.shape(in[0])) * ElemSize(c.plan.values[in[0]].type);
    if (bytes > 0 && c.ptr(out[0]) != c.ptr(in[0])) std::memcpy(c.ptr(out[0]), c.ptr(in[0]), bytes);
  }

  void Device(DeviceContext& c) const override { c.Copy(c.ptr(out[0]), c.ptr(in[0]), c.bytes(in[0])); }
};

struct IdentityKernel : CopyKernel {
  void Infer(InferContext& c) const override { c.set_shape(out[0], c.in_shape(0)); }
};

struct ReshapeKernel : CopyKernel {
  void Infer(InferContext& c) const override {
    const auto& a = c.in_shape(0);
    std::vector<int64_t> o;
    int64_t known = 1, neg = -1;  // the product of the dimensions other than -1's (checked)
    for (size_t i = 0; i < shape.size(); i++) {
      int64_t d = shape[i];
      if (d == 0 && !allowzero) {
        if (i >= a.size()) c.Fail("0 past the input's rank in the shape " + ShapeString(shape));
        d = a[i];
      }
      if (d == -1) {
        if (neg >= 0) c.Fail("more than one -1 in the shape " + ShapeString(shape));
        neg = static_cast<int64_t>(i);
        o.push_back(1);
        continue;
      }
      if (d < 0) c.Fail("negative dimension in the shape " + ShapeString(shape));
      o.push_back(d);
      if (!CheckedMul(known, d, &known) || known > kMaxElements) {
        c.Fail("the shape " + ShapeString(shape) + " has more elements than a tensor may hold");
      }
    }
    int64_t n = NumElements(a);
    if (neg >= 0) {
      if (known == 0 || n % known != 0) {
        c.Fail("cannot reshape " + ShapeString(a) + " to " + ShapeString(shape) + " (the -1 cannot be inferred)");
      }
      o[neg] = n / known;
    } else if (known != n) {
      c.Fail("cannot reshape " + ShapeString(a) + " to " + ShapeString(shape) + " (the element count changes)");
    }
    c.set_shape(out[0], std::move(o));
  }

  std::vector<int64_t> shape;  // the target; 0 copies the input's dimension unless allowzero, -1 is inferred
  bool allowzero = false;
};

struct FlattenKernel : CopyKernel {
  void Infer(InferContext& c) const override {
    const auto& a = c.in_shape(0);
    int64_t ax = axis < 0 ? axis + static_cast<int64_t>(a.size()) : axis;
    if (ax < 0 || ax > static_cast<int64_t>(a.size())) c.Fail("axis out of range");
    int64_t l = 1, rr = 1;
    for (int64_t i = 0; i < static_cast<int64_t>(a.size()); i++) (i < ax ? l : rr) *= a[i];
    c.set_shape(out[0], {l, rr});
  }

  int64_t axis = 1;
};

struct SqueezeKernel : CopyKernel {
  void Infer(InferContext& c) const override {
    const auto& a = c.in_shape(0);
    std::vector<bool> drop(a.size(), false);
    if (axes.empty()) {
      for (size_t i = 0; i < a.size(); i++) drop[i] = a[i] == 1;
    } else {
      for (int64_t ax : axes) {
        int64_t x = c.NormAxis(ax, a.size());
        if (a[x] != 1) c.Fail("squeezing a dimension that is not 1");
        drop[x] = true;
      }
    }
    std::vector<int64_t> o;
    for (size_t i = 0; i < a.size(); i++)
      if (!drop[i]) o.push_back(a[i]);
    c.set_shape(out[0], std::move(o));
  }

  std::vector<int64_t> axes;  // empty: every dimension of 1
};

struct UnsqueezeKernel : CopyKernel {
  void Infer(InferContext& c) const override {
    const auto& a = c.in_shape(0);
    size_t rank = a.size() + axes.size();
    std::vector<bool> ins(rank, false);
    for (int64_t ax : axes) {
      int64_t x = c.NormAxis(ax, rank);
      if (ins[x]) c.Fail("repeated axes");
      ins[x] = true;
    }
    std::vector<int64_t> o;
    size_t j = 0;
    for (size_t i = 0; i < rank; i++) o.push_back(ins[i] ? 1 : a.at(j++));
    c.set_shape(out[0], std::move(o));
  }

  std::vector<int64_t> axes;
};

// SqueezeAxes reads Squeeze's or Unsqueeze's axes: an input from opset 13, an attribute before.
std::vector<int64_t> SqueezeAxes(const OrtNode* n, const std::vector<const OrtValueInfo*>& ins) {
  std::vector<int64_t> axes;
  if (SinceVersion(n) >= 13) {
    if (Present(ins, 1)) axes = Ints(Param(ins[1], "axes"), "axes");
  } else if (auto ax = AttrInts(n, "axes")) {
    axes = *ax;
  }
  return axes;
}

void LowerCopy(const OrtNode* n, Plan& p) {
  std::string op = OpType(n);
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  std::unique_ptr<CopyKernel> s;
  if (op == "Reshape") {
    auto r = std::make_unique<ReshapeKernel>();
    r->shape = Ints(Param(ins.at(1), "Reshape shape"), "Reshape shape");
    r->allowzero = AttrInt(n, "allowzero", 0) != 0;
    s = std::move(r);
  } else if (op == "Flatten") {
    auto f = std::make_unique<FlattenKernel>();
    f->axis = AttrInt(n, "axis", 1);
    s = std::move(f);
  } else if (op == "Squeeze") {
    auto q = std::make_unique<SqueezeKernel>();
    q->axes = SqueezeAxes(n, ins);
    s = std::move(q);
  } else if (op == "Unsqueeze") {
    auto u = std::make_unique<UnsqueezeKernel>();
    u->axes = SqueezeAxes(n, ins);
    if (u->axes.empty()) Unsupported("Unsqueeze without axes");
    s = std::move(u);
  } else {
    s = std::make_unique<IdentityKernel>();
  }
  s->node = NodeName(n);
  s->in = {In(p, ins.at(0))};
  s->out = {Out(p, outs.at(0))};
  p.steps.push_back(std::move(s));
}

const OpRegistrar kRegistrar({"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze"}, LowerCopy);

}  // namespace

}  // namespace onnxrl_ep
