// Running a plan: shapes resolved and buffers allocated once per input signature, then the
// kernels' host loops step by step. Inputs are read in place and outputs written in place.
#include <algorithm>
#include <cstring>
#include <utility>

#include "host.h"
#include "host_group.h"
#include "ops/ops.h"
#include "plan.h"

namespace onnxrl_ep {

const std::vector<int64_t>& InferContext::shape(int v) const { return run.shapes[v]; }
const std::vector<int64_t>& InferContext::in_shape(size_t i) const { return run.shapes[plan.steps[step]->in.at(i)]; }
void InferContext::set_shape(int v, std::vector<int64_t> shape) {
  CheckedNumElements(shape, plan.steps[step]->node);  // no negative dimension, no overflowing size
  run.shapes[v] = std::move(shape);
}
std::vector<int64_t>& InferContext::aux() { return run.aux[step]; }
void InferContext::Fail(const std::string& why) const { throw Error{"node " + plan.steps[step]->node + ": " + why}; }
int64_t InferContext::NormAxis(int64_t axis, size_t rank) const {
  return onnxrl_ep::NormAxis(axis, rank, plan.steps[step]->node);
}

const std::vector<int64_t>& ExecContext::shape(int v) const { return run.shapes[v]; }
float* ExecContext::F(int v) const { return v < 0 ? nullptr : static_cast<float*>(run.ptr[v]); }
const float* ExecContext::CF(int v) const { return v < 0 ? nullptr : static_cast<const float*>(run.ptr[v]); }
void* ExecContext::ptr(int v) const { return run.ptr[v]; }
const std::vector<int64_t>& ExecContext::aux() const { return run.aux[step]; }
float* ExecContext::scratch() const { return run.scratch.data(); }

void InferRun(const Plan& p, Run& r) {
  auto& sh = r.shapes;
  for (size_t v = 0; v < p.values.size(); v++)
    if (p.values[v].is_const) sh[v] = p.values[v].c.shape;
  r.aux.assign(p.steps.size(), {});
  int64_t scratch = 0;
  // The int64 contents of Shape outputs, for ConstantOfShape.
  std::vector<std::vector<int64_t>> shape_data(p.values.size());
  for (size_t si = 0; si < p.steps.size(); si++) {
    const Kernel& k = *p.steps[si];
    InferContext c{p, r, si, shape_data, scratch};
    for (int v : k.in) {
      if (v >= 0 && sh[v].size() > static_cast<size_t>(kMaxRank)) c.Fail("rank above 8");
      if (v >= 0) CheckedNumElements(sh[v], k.node);
    }
    k.Infer(c);
  }
  r.scratch.assign(scratch, 0.0f);
  r.store.assign(p.values.size(), {});
  r.ptr.assign(p.values.size(), nullptr);
  for (size_t v = 0; v < p.values.size(); v++) {
    const Value& val = p.values[v];
    if (val.is_const) {
      r.ptr[v] = val.c.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 ? const_cast<int64_t*>(val.c.i.data())
                                                                   : static_cast<void*>(const_cast<float*>(val.c.f.data()));
    } else if (val.input < 0 && val.output < 0) {
      size_t bytes = NumElements(sh[v]) * ElemSize(val.type);
      r.store[v].assign((bytes + 7) / 8 + 1, 0);
      r.ptr[v] = r.store[v].data();
    }
  }
}

// Bounds of the host's fused MLPs: the merged heads' outputs are kept on the stack
// (host_group.cc); layers and widths are not limited by the host.
constexpr size_t kHostGroupLayers = 32;
constexpr size_t kHostGroupHeads = 8;
constexpr int64_t kHostGroupWidth = int64_t{1} << 20;

Executor::Executor(Plan plan) : plan_(std::move(plan)) {
  const size_t n = plan_.steps.size();
  group_at_.resize(n);
  in_group_.assign(n, false);
  std::vector<bool> merged(n, false);
  for (const auto& [first, g] : FindDenseGroups(plan_, kHostGroupLayers, kHostGroupHeads, kHostGroupWidth)) {
    group_at_[first] = std::make_unique<HostDenseGroup>(plan_, g);
    for (size_t si : g.trunk) in_group_[si] = true;
    for (size_t si : g.heads) {
      in_group_[si] = true;
      merged[si] = group_at_[first]->merged();
    }
  }
  for (size_t si = 0; si < n; si++)
    if (!merged[si]) plan_.steps[si]->PrepareHost();
  // A Copy step (Reshape, Squeeze, ...) whose output is not the fused node's reads and writes
  // nothing on the host: its output is its input's buffer (values are written once), so
  // CopyKernel::Host finds them equal and copies nothing.
  std::vector<int> root(plan_.values.size());
  for (size_t v = 0; v < root.size(); v++) root[v] = static_cast<int>(v);
  for (const auto& k : plan_.steps)
    if (std::string(k->Kind()) == "Copy" && k->in[0] >= 0 && k->out[0] >= 0 && plan_.values[k->out[0]].output < 0) {
      root[k->out[0]] = root[k->in[0]];
      alias_.emplace_back(k->out[0], root[k->in[0]]);
    }
}

Executor::~Executor() = default;

Run* Executor::Acquire(const Inputs& in) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = runs_.size(); i-- > 0;) {
    Run& r = *runs_[i];
    if (!r.busy && in.Matches(r.key)) {
      r.busy = true;
      return &r;
    }
  }
  // A bounded set: a caller cycling through many shapes re-plans the least recently used.
  if (runs_.size() >= kMaxRuns) {
    for (size_t i = 0; i < runs_.size(); i++)
      if (!runs_[i]->busy) {
        runs_.erase(runs_.begin() + i);
        break;
      }
  }
  auto r = std::make_unique<Run>();
  r->key = in.Key();
  r->shapes.assign(plan_.values.size(), {});
  for (size_t i = 0; i < plan_.inputs.size(); i++)
    r->shapes[plan_.inputs[i]].assign(in.dims[i], in.dims[i] + in.ranks[i]);
  InferRun(plan_, *r);
  r->busy = true;
  runs_.push_back(std::move(r));
  return runs_.back().get();
}

void Executor::Release(Run* r) {
  std::lock_guard<std::mutex> lock(mu_);
  r->busy = false;
  // Most recently used last: the next Acquire of this signature finds it first.
  for (size_t i = 0; i + 1 < runs_.size(); i++)
    if (runs_[i].get() == r) {
      std::rotate(runs_.begin() + i, runs_.begin() + i + 1, runs_.end());
      break;
    }
}

void Executor::Execute(Run& r, OrtKernelContext* ctx) {
  for (size_t si = 0; si < plan_.steps.size(); si++) {
    ExecContext c{plan_, r, si};
    c.ort = ctx;
    if (group_at_[si] != nullptr) {
      group_at_[si]->Run(c);  // the whole group, here at its first step
    } else if (!in_group_[si]) {
      plan_.steps[si]->Host(c);
    }
  }
}

void Inputs::Read(OrtKernelContext* ctx, const Plan& plan) {
  size_t n = plan.inputs.size();
  data.resize(n);
  dims.resize(n);
  ranks.resize(n);
  for (size_t i = 0; i < n; i++) {
    const OrtValue* v = nullptr;
    Check(g_ort->KernelContext_GetInput(ctx, i, &v), "KernelContext_GetInput");
    if (v == nullptr) throw Error{"input " + std::to_string(i) + " is missing"};
    ONNXTensorElementDataType t;
    Check(g_ort->GetTensorElementTypeAndShapeDataReference(v, &t, &dims[i], &ranks[i]), "input shape");
    const Value& val = plan.values[plan.inputs[i]];
    if (t != val.type) throw Error{"input " + val.name + " has an unexpected element type"};
    Check(g_ort->GetTensorData(v, &data[i]), "GetTensorData");
  }
}

std::vector<int64_t> Inputs::Key() const {
  std::vector<int64_t> key;
  for (size_t i = 0; i < dims.size(); i++) {
    key.push_back(static_cast<int64_t>(ranks[i]));
    key.insert(key.end(), dims[i], dims[i] + ranks[i]);
  }
  return key;
}

bool Inputs::Matches(const std::vector<int64_t>& key) const {
  size_t pos = 0;
  for (size_t i = 0; i < dims.size(); i++) {
    if (pos >= key.size() || key[pos++] != static_cast<int64_t>(ranks[i])) return false;
    if (key.size() - pos < ranks[i]) return false;
    for (size_t d = 0; d < ranks[i]; d++)
      if (key[pos++] != dims[i][d]) return false;
  }
  return pos == key.size();
}

OrtStatus* Executor::Compute(OrtKernelContext* ctx) noexcept {
  Run* r = nullptr;
  try {
    // Per thread, so that concurrent calls do not share it and a steady-state call allocates
    // nothing.
    thread_local Inputs in;
    in.Read(ctx, plan_);
    r = Acquire(in);
    for (size_t i = 0; i < in.data.size(); i++) r->ptr[plan_.inputs[i]] = const_cast<void*>(in.data[i]);
    for (size_t i = 0; i < plan_.outputs.size(); i++) {
      int v = plan_.outputs[i];
      const auto& shape = r->shapes[v];
      OrtValue* out = nullptr;
      Check(g_ort->KernelContext_GetOutput(ctx, i, shape.data(), shape.size(), &out), "KernelContext_GetOutput");
      void* data = nullptr;
      Check(g_ort->GetTensorMutableData(out, &data), "GetTensorMutableData");
      const Value& val = plan_.values[v];
      if (val.input >= 0 || val.is_const) {
        // An output that is an input or a constant: copied, never written through.
        size_t bytes = NumElements(shape) * ElemSize(val.type);
        if (bytes > 0) std::memcpy(data, r->ptr[v], bytes);
      } else {
        r->ptr[v] = data;
      }
    }
    for (const auto& [v, from] : alias_) r->ptr[v] = r->ptr[from];
    Execute(*r, ctx);
    Release(r);
    return nullptr;
  } catch (Error& e) {
    if (r != nullptr) Release(r);
    return Fail(plan_.name + ": " + e.msg);
  } catch (std::exception& e) {
    if (r != nullptr) Release(r);
    return Fail(plan_.name + ": " + e.what());
  } catch (...) {
    if (r != nullptr) Release(r);
    return Fail(plan_.name + ": unknown failure");
  }
}

}  // namespace onnxrl_ep
