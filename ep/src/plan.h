// A compiled fused subgraph: values (inputs, constants copied once, intermediates, outputs)
// and steps in execution order. Built by lower.cc, run by exec.cc with the host kernels of
// host.cc. Shapes are resolved and buffers allocated once per input signature (in practice
// once per batch size), so a steady-state run allocates nothing.
#pragma once

#include <climits>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph_util.h"
#include "kernels.h"

namespace onnxrl_ep {

enum class Op : int32_t {
  kDense,      // out = act(A @ W + bias); A [..., K], W [K, N] packed once
  kBinary,     // broadcasting Add/Sub/Mul/Div
  kUnary,      // elementwise activation
  kSoftmax,    // Softmax / LogSoftmax along one axis
  kCopy,       // Identity, Reshape, Flatten, Squeeze, Unsqueeze: same data, new shape
  kConcat,
  kTranspose,
  kSlice,
  kGather,     // constant indices
  kSplit,
  kShape,      // int64 output computed from the input's shape
  kFill,       // ConstantOfShape
  kLstm,
  kGru,
};

enum class CopyKind : int32_t { kIdentity, kReshape, kFlatten, kSqueeze, kUnsqueeze };

struct Value {
  std::string name;
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  bool is_const = false;
  ConstTensor c;  // the data of a constant
  int input = -1;   // index among the fused node's inputs, or -1
  int output = -1;  // index among the fused node's outputs, or -1
};

struct Step {
  Op op = Op::kCopy;
  std::string node;  // the ONNX node's name, for messages
  std::vector<int> in, out;  // value ids; -1 for an absent optional one
  int32_t code = 0;          // Act or Bin
  float a = 0, b = 0;        // the activation's parameters (LeakyRelu alpha, Clip min/max)
  bool log = false;          // LogSoftmax
  bool legacy = false;       // Softmax before opset 13: coerce to 2-D at axis
  int64_t axis = 0;
  CopyKind copy = CopyKind::kIdentity;
  bool allowzero = false;
  std::vector<int64_t> ints;  // Reshape target, Transpose perm, axes, split sizes, indices
  std::vector<int64_t> idx_shape;  // Gather's indices shape
  std::vector<int64_t> starts, ends, axes, steps;  // Slice
  int64_t K = 0, N = 0;                             // Dense
  std::vector<float> w, bias;                       // Dense: W [K][N], bias [N] (empty: none)
  int64_t H = 0, I = 0;                             // LSTM / GRU
  bool lbr = false;                                 // GRU linear_before_reset
  std::vector<float> wx, wh, bx, bh;                // RNN: Wx [I][G*H], Wh [H][G*H], biases [G*H]
  float fill = 0;                                   // ConstantOfShape's value
  int64_t start = 0, end = LLONG_MAX;               // Shape's start/end
};

struct Plan {
  std::vector<Value> values;
  std::vector<Step> steps;
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
// Fuse folds bias Adds and activations into the preceding Dense steps.
void Fuse(Plan& plan);
// BuildPlan lowers one fused subgraph handed to Compile.
Plan BuildPlan(const OrtGraph* graph, const OrtNode* fused);

// Resolved shapes and buffers for one input signature.
struct Run {
  std::vector<int64_t> key;  // the inputs' ranks and dims
  std::vector<std::vector<int64_t>> shapes;  // per value
  std::vector<std::vector<int64_t>> store;   // owned storage (8-byte words) per value
  std::vector<void*> ptr;                    // per value
  std::vector<std::vector<int64_t>> sa, sb;  // Binary: broadcast strides of both inputs per step
  std::vector<float> scratch;                // RNN gates
};

// Executor runs a plan on the host. Compute is safe to call from several threads (one at a time).
class Executor {
 public:
  explicit Executor(Plan plan) : plan_(std::move(plan)) {}
  OrtStatus* Compute(OrtKernelContext* ctx) noexcept;
  const Plan& plan() const { return plan_; }

 private:
  Run& Resolve(const std::vector<const int64_t*>& dims, const std::vector<size_t>& ranks);
  void Infer(Run& r);
  void Execute(Run& r);

  static constexpr size_t kMaxRuns = 64;  // input signatures kept planned

  Plan plan_;
  std::mutex mu_;
  std::vector<Run> runs_;
  std::vector<const void*> in_data_;
  std::vector<const int64_t*> in_dims_;
  std::vector<size_t> in_ranks_;
};

int64_t NumElements(const std::vector<int64_t>& shape);

}  // namespace onnxrl_ep
