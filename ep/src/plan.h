// A compiled fused subgraph: values (inputs, constants copied once, intermediates, outputs)
// and steps (kernels, kernel.h) in execution order. Built by lower.cc with the lowerings of
// ops/, run by exec.cc. Shapes are resolved and buffers allocated once per input signature (in
// practice once per batch size), so a steady-state run allocates nothing.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graph_util.h"
#include "kernel.h"
#include "shape_util.h"

namespace onnxrl_ep {

struct Value {
  std::string name;
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  bool is_const = false;
  ConstTensor c;  // the data of a constant
  int input = -1;   // index among the fused node's inputs, or -1
  int output = -1;  // index among the fused node's outputs, or -1
};

struct Plan {
  std::vector<Value> values;
  std::vector<std::unique_ptr<Kernel>> steps;
  std::vector<int> inputs;   // value id per fused input index
  std::vector<int> outputs;  // value id per fused output index
  std::unordered_map<std::string, int> ids;
  std::string name;  // the fused node's name

  // Id returns the value named name, adding it when new.
  int Id(const std::string& name);
};

// LowerNode appends the steps for node n to plan (constants read from the graph, valid during
// the runtime's call only). It throws Error with the reason when n is not supported; that is
// also how GetCapability decides.
void LowerNode(const OrtNode* n, Plan& plan);
// Fuse folds the exact GELU pattern into one step, and bias Adds and activations into the
// preceding Dense or LayerNorm steps (ops/dense.cc).
void Fuse(Plan& plan);
// BuildPlan lowers one fused subgraph handed to Compile.
Plan BuildPlan(const OrtGraph* graph, const OrtNode* fused);

// Resolved shapes and buffers for one input signature.
struct Run {
  std::vector<int64_t> key;  // the inputs' ranks and dims
  std::vector<std::vector<int64_t>> shapes;  // per value
  std::vector<std::vector<int64_t>> store;   // owned storage (8-byte words) per value
  std::vector<void*> ptr;                    // per value
  std::vector<std::vector<int64_t>> aux;     // per step: int64 data of this signature (Binary's strides)
  std::vector<float> scratch;                // RNN gates
  bool busy = false;                         // held by a call of Executor::Compute
};

// InferRun resolves every value's shape from the inputs' (r.shapes of inputs already set, r.shapes
// sized to the plan's values), fills r.aux and sizes r.scratch, and allocates the host buffers of
// intermediates (r.store, r.ptr; constants point at the plan's data, inputs and outputs are left
// null). Throws Error when a step rejects its inputs' shapes.
void InferRun(const Plan& p, Run& r);

// Inputs is a run's fused inputs as the runtime hands them over: data, dims and ranks, kept by
// each executor so that a steady-state run allocates nothing.
struct Inputs {
  std::vector<const void*> data;
  std::vector<const int64_t*> dims;
  std::vector<size_t> ranks;
  // Read takes the inputs of ctx, checking that each has the plan's element type.
  void Read(OrtKernelContext* ctx, const Plan& plan);
  // Key is the inputs' signature: each one's rank, then its dims. Matches compares it with a
  // key without building one (a steady-state run allocates nothing).
  std::vector<int64_t> Key() const;
  bool Matches(const std::vector<int64_t>& key) const;
};

// Executor runs a plan on the host. Compute may be called from several threads at once: each
// call takes a run (shapes and buffers of its input signature) that no other call holds, so
// concurrent runs of one session proceed in parallel; the lock covers only the look-up.
class HostDenseGroup;

class Executor {
 public:
  // The constructor finds the fused MLPs (FindDenseGroups, run by host_group.h) and prepares
  // every step for the host (Kernel::PrepareHost: packed weights).
  explicit Executor(Plan plan);
  ~Executor();
  OrtStatus* Compute(OrtKernelContext* ctx) noexcept;
  const Plan& plan() const { return plan_; }

 private:
  // Acquire returns a run of the inputs' signature that no other call holds, planning one
  // (InferRun) when none is free; Release hands it back.
  Run* Acquire(const Inputs& in);
  void Release(Run* r);
  void Execute(Run& r, OrtKernelContext* ctx);

  static constexpr size_t kMaxRuns = 64;  // idle runs kept planned

  Plan plan_;
  std::vector<std::unique_ptr<HostDenseGroup>> group_at_;  // per step: the group it starts, or null
  std::vector<bool> in_group_;                             // per step: run by a group
  std::vector<std::pair<int, int>> alias_;  // (value, the value whose buffer it is): Copy outputs
  std::mutex mu_;
  std::vector<std::unique_ptr<Run>> runs_;  // most recently used last
};

}  // namespace onnxrl_ep
