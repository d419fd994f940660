// The one interface every operator implements: a Kernel is one step of a plan, with its shape
// inference, its host loop and its CUDA launches; each ONNX operator's lowering (the function that turns a node into
// kernels) is registered by op type in one table. An operator lives in one file, ops/<op>.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "ort.h"

namespace onnxrl_ep {

struct Plan;
struct Run;
class DeviceContext;

// InferContext is handed to each step in turn while a signature is planned (exec.cc, InferRun):
// the shapes of the step's inputs are set in run.shapes; the step sets its outputs'.
struct InferContext {
  const Plan& plan;
  Run& run;
  size_t step;
  std::vector<std::vector<int64_t>>& shape_data;  // per value: the int64 contents of Shape outputs
  int64_t& scratch;  // floats of run.scratch this signature needs: the largest any step asks for

  const std::vector<int64_t>& shape(int v) const;
  // in_shape is the shape of the step's i-th input.
  const std::vector<int64_t>& in_shape(size_t i) const;
  void set_shape(int v, std::vector<int64_t> shape);
  // aux is the step's int64 scratch vector for this signature (run.aux[step]).
  std::vector<int64_t>& aux();
  // Fail throws Error{"node <name>: why"}.
  [[noreturn]] void Fail(const std::string& why) const;
  // NormAxis is axis counted from the front of a rank-dimensional shape; Fail when out of range.
  int64_t NormAxis(int64_t axis, size_t rank) const;
};

// RowsPerTask is how many of M rows one task of a parallel loop takes when each row costs
// macs multiply-adds: enough that a task outweighs handing it to a thread (about 2^19
// multiply-adds, ten microseconds), and a multiple of 16 rows, at least 16 (a wide layer, such
// as a CNN's 3136 x 512 Linear, got one row per task, so its multiply ran one-row tiles), or M
// when fewer.
inline int64_t RowsPerTask(int64_t macs, int64_t M) {
  int64_t want = (int64_t{1} << 19) / (macs > 0 ? macs : 1);
  want = want < 16 ? 16 : (want + 15) / 16 * 16;
  if (want > M) want = M;
  return want > 0 ? want : 1;
}

// TaskRows is RowsPerTask for a loop whose tiles are align rows: every task but the last takes
// a multiple of align rows (no partial tile inside the loop), and the tasks are of about equal
// size, an even number of them when more than one (two threads share them evenly).
inline int64_t TaskRows(int64_t macs, int64_t M, int64_t align) {
  const int64_t want = RowsPerTask(macs, M);
  int64_t tasks = (M + want - 1) / want;
  if (tasks > 1 && tasks % 2 == 1) tasks++;
  int64_t rows = tasks > 0 ? (M + tasks - 1) / tasks : M;
  rows = (rows + align - 1) / align * align;
  return rows > 0 ? rows : 1;
}

// ExecContext is handed to each step in turn when a plan runs on the host. Buffers are those of
// run.ptr: inputs read in place, outputs written in place, intermediates owned by the run.
struct ExecContext {
  const Plan& plan;
  Run& run;
  size_t step;

  const std::vector<int64_t>& shape(int v) const;
  // F and CF are a float value's buffer; nullptr for an absent optional value (-1).
  float* F(int v) const;
  const float* CF(int v) const;
  // ptr is any value's buffer, whatever its element type.
  void* ptr(int v) const;
  const std::vector<int64_t>& aux() const;
  float* scratch() const;

  // ParallelFor calls f(i) for i in [0, n) on the session's intra-op threads (the runtime's
  // KernelContext_ParallelFor; in the calling thread when there is no runtime context, as in
  // tests, or one task). f must not throw.
  template <typename F>
  void ParallelFor(size_t n, F& f) const {
    if (n == 0) return;
    if (n == 1 || ort == nullptr) {
      for (size_t i = 0; i < n; i++) f(i);
      return;
    }
    auto call = [](void* fp, size_t i) { (*static_cast<F*>(fp))(i); };
    Check(g_ort->KernelContext_ParallelFor(ort, call, n, 0, &f), "KernelContext_ParallelFor");
  }

  // ParallelRows splits M independent rows, each costing about cost multiply-adds, into tasks
  // of TaskRows rows (whole tiles of 8, an even number of about equal tasks) on the session's
  // threads, calling f(m0, m1) for each range.
  template <typename F>
  void ParallelRows(int64_t M, int64_t cost, F&& f) const {
    if (M <= 0) return;
    const int64_t rows = TaskRows(cost, M, 8);
    auto task = [&](size_t t) {
      const int64_t m0 = static_cast<int64_t>(t) * rows;
      f(m0, m0 + rows < M ? m0 + rows : M);
    };
    ParallelFor(static_cast<size_t>((M + rows - 1) / rows), task);
  }

  OrtKernelContext* ort = nullptr;  // the runtime's context of this run (null in tests)
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Kind names the kernel: "Dense", "Binary", "Unary", "Softmax", "Copy", "Concat", "Transpose",
  // "Slice", "Gather", "Split", "Shape", "Fill", "Lstm", "Gru".
  virtual const char* Kind() const = 0;
  // Infer sets the outputs' shapes from the inputs' (and any per-signature data), or fails.
  virtual void Infer(InferContext& c) const = 0;
  // Host runs the step on the host.
  virtual void Host(ExecContext& c) const = 0;
  // Device issues the step's launches on the CUDA backend's stream (cuda/device_context.h).
  virtual void Device(DeviceContext& c) const = 0;
  // PrepareHost is called once by the host executor before its first run, to put constants
  // in the form its loops want (Dense packs its weights, gemm.h); nothing by default.
  virtual void PrepareHost() {}

  std::string node;          // the ONNX node's name, for messages
  std::vector<int> in, out;  // value ids; -1 for an absent optional one
};

// LowerFn appends the kernels for node n to plan p (constants read from the graph, valid during
// the runtime's call only); it throws Error with the reason when n is not supported.
using LowerFn = void (*)(const OrtNode* n, Plan& p);

// OpRegistrar registers fn for op_types (ONNX domain) at load time: one static per op file. A
// nil function or an op type registered twice is a programmer mistake and aborts.
struct OpRegistrar {
  OpRegistrar(std::initializer_list<const char*> op_types, LowerFn fn);
};

// FindLowering is the lowering registered for op_type, or nullptr.
const LowerFn* FindLowering(const std::string& op_type);
// RegisteredOps lists the registered op types, sorted.
std::vector<std::string> RegisteredOps();

}  // namespace onnxrl_ep
