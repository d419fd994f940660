// The CUDA backend: a plan run on one GPU. Weights stay resident on the device; inputs and
// outputs are copied with asynchronous DMA on one stream per executor, straight where they lie
// in host memory their owner pinned (pinned.h), else staged through pinned host buffers; each input signature (in practice each batch size) gets its device buffers once,
// runs eagerly the first time and its launches are then captured into a CUDA graph that later
// runs replay (the copies stay on the stream, outside the graph).
// The runtime's tensors stay on the CPU (the factory registers no device allocator).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "../ops/ops.h"
#include "../plan.h"
#include "cuda_api.h"
#include "device_context.h"
#include "loader.h"

namespace onnxrl_ep {

// CudaDevice is one GPU with its primary context and the backend's compiled kernels, opened
// once per process and device id and shared by every executor on it.
struct CudaDevice {
  const Driver* driver = nullptr;
  int id = 0;
  cu::CUdevice dev = 0;
  cu::CUcontext ctx = nullptr;
  cu::CUmodule module = nullptr;
  std::string name;
  int cc = 0;  // compute capability, e.g. 90
  int sms = 0;
  std::string target;  // what NVRTC built: sm_90 or compute_90
  std::string nvrtc;   // which NVRTC, for messages
  std::unordered_map<std::string, cu::CUfunction> functions;

  cu::CUfunction Function(const std::string& name) const;
  // MakeCurrent makes the context current on the calling thread.
  void MakeCurrent() const;
  const cu::DriverApi& api() const { return driver->api; }
};

// OpenCudaDevice loads the driver and NVRTC, checks device id exists, and compiles (or reads
// from the cache) the kernels for it. Throws Error naming what is missing.
CudaDevice& OpenCudaDevice(int id);

// UseGraphs reports whether signatures are captured into CUDA graphs ($ONNXRL_CUDA_GRAPHS=0
// turns it off, for measuring what the graphs buy).
bool UseGraphs();
// GraphCopies reports whether a signature whose inputs and outputs all lie in pinned memory
// captures its copies into its CUDA graph too, so that a run is one graph launch
// ($ONNXRL_CUDA_GRAPH_COPIES=0 keeps them outside, for measuring).
bool GraphCopies();
// Overlap reports whether a capture with the copies puts them on a second stream, so that they
// overlap the kernels that do not need them ($ONNXRL_CUDA_OVERLAP=0 keeps them in line, for
// measuring).
bool Overlap();
// DirectBytes is the size of a run's inputs and outputs together from which they are copied
// straight from and to the runtime's (pageable) tensors, the driver staging them, instead of
// through the signature's pinned buffers and a host copy ($ONNXRL_CUDA_DIRECT_BYTES overrides,
// for measuring).
size_t DirectBytes();

class CudaExecutor {
 public:
  CudaExecutor(Plan plan, CudaDevice& dev);
  ~CudaExecutor();
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  OrtStatus* Compute(OrtKernelContext* ctx) noexcept;
  const Plan& plan() const { return plan_; }
  // Fused is how many groups of Dense steps run as one onnxrl_mlp launch each.
  size_t fused() const { return groups_.size(); }

 private:
  friend class DeviceContext;

  // Sig is one input signature: host-side shapes and the device state of its runs.
  struct Sig {
    Run run;
    std::vector<cu::CUdeviceptr> dptr;  // per value
    std::vector<cu::CUdeviceptr> owned;
    std::vector<void*> pin_in, pin_out;    // per fused input / output (staged copies only)
    std::vector<size_t> in_bytes, out_bytes;
    bool direct = false;  // copies straight from and to the runtime's tensors (DirectBytes)
    // This run's inputs and outputs that lie in pinned host memory (pinned.h): copied straight,
    // whatever direct says.
    std::vector<char> in_pin, out_pin;
    // Staged outputs of more than one chunk: an event after each chunk's copy, so that the
    // host copies a chunk out while the next ones are still on their way.
    std::vector<cu::CUevent> events;
    // The profile ($ONNXRL_CUDA_PROFILE=1): runs and microseconds in each phase.
    long long runs = 0, pinned = 0;  // pinned: tensors copied straight from pinned memory
    double us_in = 0, us_kernels = 0, us_out = 0;
    DeviceContext::ScratchMap scratch;  // (step, index) -> buffer and its floats
    cu::CUgraphExec graph = nullptr;
    // The graph holds the copies too (GraphCopies): captured when every input and output was
    // pinned, from and to the host buffers in io (inputs, then outputs), replayed only while
    // the run's buffers are those.
    bool graph_copies = false;
    std::vector<const void*> io;
    // The events of a capture whose copies run on the side stream (Overlap): the fork, the
    // join, one per input (copied in), one per output (produced).
    std::vector<cu::CUevent> marks;
  };

  // StepHooks let a capture wait for a step's inputs and copy its outputs out as soon as it
  // is issued (Capture with the copies on the side stream).
  struct StepHooks {
    std::function<void(int)> before;  // for each value a step reads
    std::function<void(int)> after;   // for each value a step writes, once it is issued
  };

  Sig& Resolve(const Inputs& in);
  void Release(Sig& s);
  void Alloc(cu::CUdeviceptr* p, size_t bytes, const std::string& what);
  // RecordKernels issues the steps' launches alone (the fused MLP chains as one each).
  void RecordKernels(Sig& s, bool capturing, const StepHooks* hooks = nullptr);
  // CaptureOverlapped issues a capture's copies on side_, each input's before the first step
  // that reads it waits for it, each output's as soon as the step that writes it is issued,
  // so that they overlap the kernels that do not need them.
  void CaptureOverlapped(Sig& s);
  // Mlp runs a group of Dense steps (ops.h, FindDenseGroups) as one onnxrl_mlp launch.
  void Mlp(Sig& s, const DenseGroup& g);
  // CopyIn and CopyOut issue a run's copies on the stream: straight from and to the runtime's
  // tensors (direct, or those in pinned memory), or through the pinned buffers in chunks of
  // kChunkBytes, so that the host copies one chunk while the DMA engine moves another (CopyIn
  // fills the pinned buffers; Unstage waits for the stream, or chunk by chunk for its events,
  // empties them into the outputs, and waits for the straight copies).
  void CopyIn(Sig& s);
  void CopyOut(Sig& s);
  void Unstage(Sig& s);
  void Profile(Sig& s);
  // AllPinned reports whether every input and output the device copies lies in pinned memory
  // this run; SameIo whether they are also the buffers s.graph's copies were captured with.
  bool AllPinned(const Sig& s) const;
  bool SameIo(const Sig& s) const;
  void Capture(Sig& s, bool with_copies);
  void FindGroups();

  static constexpr size_t kMaxSigs = 16;
  static constexpr size_t kChunkBytes = size_t{256} << 10;

  Plan plan_;
  CudaDevice& dev_;
  cu::CUstream stream_ = nullptr;
  cu::CUstream side_ = nullptr;  // the copies of an overlapped capture
  std::mutex mu_;
  std::vector<std::unique_ptr<Sig>> sigs_;
  std::unordered_map<const void*, cu::CUdeviceptr> resident_;
  std::vector<cu::CUdeviceptr> consts_;  // per value: constants uploaded at construction (0 otherwise)
  std::map<size_t, DenseGroup> groups_;  // by the group's first step
  std::vector<bool> in_group_;         // per step: run inside a group
  bool overlappable_ = false;          // a capture's copies can overlap launches (FindGroups)
  Inputs in_;
  std::vector<void*> out_data_;
};

}  // namespace onnxrl_ep
