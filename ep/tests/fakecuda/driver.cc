// The CUDA driver API the backend binds (src/cuda/cuda_api.h's DriverApi), emulated on the
// host: one device, "device" memory from aligned_alloc, every copy and launch done at once on
// the calling thread (so a stream synchronization has nothing to wait for), kernels run by the
// block emulator, and stream capture recording copies and launches into a graph that a
// launch of its instance replays. With ONNXRL_FAKECUDA_DEFER=1 the work issued on a stream
// waits instead until the stream is synchronized (or memory freed, or the stream destroyed),
// so that a host read of a result before the synchronization sees the old bytes, as it may on
// a GPU. With ONNXRL_FAKECUDA_DEFER=2, moreover, a synchronous cuMemcpyHtoD from pageable
// memory returns once the source is staged, and its transfer to the device lands only after the
// work of the stream synchronized next: the driver documents that the transfer "may not have
// completed" on return, and a stream created CU_STREAM_NON_BLOCKING does not wait for it.
//
// What the real driver refuses, this one refuses too, with the driver's error code and a line
// on stderr that starts "onnxrl fakecuda: " (the tests look for it): copies outside a live
// allocation, a kernel pointer argument that is not null and not in device or pinned memory,
// launches past the grid and block limits or the kernel's __launch_bounds__, more dynamic
// shared memory than the function allows, allocations and synchronous copies while the thread
// captures a stream, frees of what was not allocated, and handles that are not live. Device
// memory and pinned memory start out as NaNs, so a read of what no one wrote shows.
//
// Environment, read by cuInit: ONNXRL_FAKECUDA_MEM_LIMIT (bytes): cuMemAlloc fails with
// CUDA_ERROR_OUT_OF_MEMORY past that much live device memory; ONNXRL_FAKECUDA_DEFER=1 or 2: see
// above.
#include <algorithm>
#include <cstdarg>
#include <iterator>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <type_traits>
#include <vector>

#include "cuda/cuda_api.h"
#include "kernel_table.h"

#define ONNXRL_FAKECUDA_EXPORT extern "C" __attribute__((visibility("default")))

namespace cu = onnxrl_ep::cu;
using cu::CUcontext;
using cu::CUdevice;
using cu::CUdeviceptr;
using cu::CUevent;
using cu::CUfunction;
using cu::CUgraph;
using cu::CUgraphExec;
using cu::CUmodule;
using cu::CUresult;
using cu::CUstream;

namespace onnxrl_fakecuda {

namespace {

// Error codes of cuda.h beyond those cuda_api.h names.
constexpr CUresult kInvalidValue = 1;
constexpr CUresult kNotInitialized = 3;
constexpr CUresult kInvalidContext = 201;
constexpr CUresult kInvalidHandle = 400;
constexpr CUresult kIllegalState = 401;
constexpr CUresult kNotFound = 500;
constexpr CUresult kIllegalAddress = 700;
constexpr CUresult kCaptureUnsupported = 900;
constexpr CUresult kCaptureInvalidated = 901;
constexpr CUresult kCaptureUnjoined = 904;
constexpr CUresult kCaptureIsolation = 905;
constexpr CUresult kCaptureWrongThread = 908;

constexpr int kDriverVersion = 13000;
constexpr const char* kDeviceName = "onnxrl fake CUDA device (host emulation)";
constexpr int kMaxSharedOptin = 232448;        // an H100's
constexpr int kMaxSharedDefault = 48 * 1024;  // without cuFuncSetAttribute
constexpr size_t kAlign = 256;

struct Named {
  CUresult code;
  const char* name;
  const char* text;
};
constexpr Named kErrors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {kInvalidValue, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {cu::CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {kNotInitialized, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {cu::CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {cu::CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {kInvalidContext, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {cu::CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {cu::CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
    {kInvalidHandle, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {kIllegalState, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
    {kNotFound, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {kIllegalAddress, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {kCaptureUnsupported, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
    {kCaptureInvalidated, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"},
    {kCaptureUnjoined, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", "capture sequence contains a fork that was not joined to the primary stream"},
    {kCaptureIsolation, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION", "capture dependency was not captured"},
    {kCaptureWrongThread, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", "attempt to terminate a thread-local capture sequence from another thread"},
};

// Misuse prints a line the tests look for and returns code.
__attribute__((format(printf, 2, 3))) CUresult Misuse(CUresult code, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "onnxrl fakecuda: %s\n", buf);
  return code;
}

// Op is one recorded operation: a copy or a launch, with the launch's arguments by value.
struct Op {
  // A copy: bytes from src to dst, each device (or pinned) memory or any host memory.
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
  bool dst_device = false, src_device = false;
  std::vector<unsigned char> staged;  // the source's bytes, copied when issued (then src is unused)
  const char* what = nullptr;  // the entry point, for messages
  // A launch (kernel not null).
  const Kernel* kernel = nullptr;
  Dim3 grid, block;
  unsigned smem = 0;
  std::vector<unsigned char> args;  // the parameters, each at offsets[i]
  std::vector<size_t> offsets;
};

struct Graph {
  std::vector<Op> ops;
};

struct GraphExec {
  std::vector<Op> ops;
};

struct Stream {
  bool capturing = false;
  bool invalidated = false;  // a refused call during the capture: EndCapture fails
  int mode = 0;
  std::thread::id thread;  // the capturing thread
  std::unique_ptr<Graph> graph;
  // A stream that joined another's capture (it waited on an event recorded there): its work
  // goes into origin's graph, in issue order (one valid order of the graph's dependencies).
  // issued counts its captured ops, joined how many of them the origin has waited for: the
  // capture ends only when every joined stream is joined back (joined == issued).
  Stream* origin = nullptr;
  size_t issued = 0, joined = 0;
  std::vector<Op> pending;  // issued and not yet run (ONNXRL_FAKECUDA_DEFER)
  size_t base = 0;          // how many ops of this stream have left pending (run), for events
};

// Event marks a point in a stream's work: cuEventSynchronize runs the stream's pending work up
// to it, and no further (ONNXRL_FAKECUDA_DEFER), so a read past it shows stale bytes.
struct Event {
  // Recorded into a capture: the capture's origin stream, and how many captured ops the
  // recording stream had issued by then (what a wait on it by the origin joins back).
  Stream* capture = nullptr;
  size_t captured = 0;
  Stream* stream = nullptr;
  size_t target = 0;  // the stream's base + pending size when recorded
  bool recorded = false;
};

struct Module {};
struct Context {};

struct Allocation {
  size_t bytes;
  bool pinned;  // cuMemAllocHost
};

struct State {
  std::mutex mu;  // everything below, held through copies and launches
  bool initialized = false;
  int defer = 0;  // ONNXRL_FAKECUDA_DEFER: 1 streams' work deferred, 2 synchronous transfers too
  std::vector<Op> legacy;  // synchronous transfers not yet landed (ONNXRL_FAKECUDA_DEFER=2)
  size_t limit = SIZE_MAX;
  size_t device_bytes = 0;
  std::map<uintptr_t, Allocation> allocations;  // by base address
  std::map<uintptr_t, size_t> registered;        // cuMemHostRegister's ranges, by base address
  std::set<Stream*> streams;
  std::set<Graph*> graphs;
  std::set<GraphExec*> execs;
  std::set<Event*> events;
  std::set<Module*> modules;
  std::map<const Kernel*, int> max_dynamic_smem;  // cuFuncSetAttribute
  int context_refs = 0;
  int global_captures = 0;  // streams capturing in CU_STREAM_CAPTURE_MODE_GLOBAL
};

State& S() {
  static State* s = new State;  // never destroyed: the library is never unloaded
  return *s;
}

Context g_context;
thread_local bool t_current = false;       // the primary context is current on this thread
thread_local Stream* t_capture = nullptr;  // the stream this thread captures (thread-local mode)

constexpr int kModeGlobal = 0;
constexpr int kModeThreadLocal = cu::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;

// Live reports whether [p, p + bytes) lies in one live allocation (bytes 0: p may be its end).
bool Live(State& s, uintptr_t p, size_t bytes, bool pinned_ok = true) {
  auto it = s.allocations.upper_bound(p);
  if (it == s.allocations.begin()) return false;
  --it;
  if (it->second.pinned && !pinned_ok) return false;
  return p - it->first <= it->second.bytes && bytes <= it->second.bytes - (p - it->first);
}

// HostPinned reports whether [p, p + bytes) lies in one pinned allocation or registered range.
bool HostPinned(State& s, const void* p, size_t bytes) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  auto it = s.allocations.upper_bound(a);
  if (it != s.allocations.begin()) {
    --it;
    if (it->second.pinned && a - it->first <= it->second.bytes && bytes <= it->second.bytes - (a - it->first))
      return true;
  }
  auto r = s.registered.upper_bound(a);
  if (r == s.registered.begin()) return false;
  --r;
  return a - r->first <= r->second && bytes <= r->second - (a - r->first);
}

// Unsafe is what the driver answers a call that is not allowed while this thread (or, in global
// mode, any thread) captures a stream: the capture is invalidated.
CUresult Unsafe(State& s, const char* what) {
  Stream* c = t_capture;
  if (c == nullptr && s.global_captures > 0)
    for (Stream* st : s.streams)
      if (st->capturing && st->mode == kModeGlobal) c = st;
  if (c == nullptr) return 0;
  c->invalidated = true;
  return Misuse(kCaptureUnsupported, "%s while a stream is being captured (the capture is invalidated)", what);
}

CUresult CheckStream(State& s, CUstream h) {
  if (h == nullptr) return 0;
  if (!s.streams.count(reinterpret_cast<Stream*>(h))) return Misuse(kInvalidHandle, "a stream that is not live");
  return 0;
}

// Params is a launch's parameter list, as cuLaunchKernel had it.
std::vector<void*> Params(const Op& op) {
  std::vector<void*> params(op.offsets.size());
  for (size_t i = 0; i < params.size(); i++)
    params[i] = const_cast<unsigned char*>(op.args.data() + op.offsets[i]);
  return params;
}

// CheckOp checks an operation's addresses against the live allocations.
CUresult CheckOp(State& s, const Op& op) {
  if (op.kernel == nullptr) {
    if (op.dst_device && !Live(s, reinterpret_cast<uintptr_t>(op.dst), op.bytes))
      return Misuse(kInvalidValue, "%s: destination %p + %zu bytes is not in a live allocation", op.what, op.dst,
                    op.bytes);
    if (op.src_device && !Live(s, reinterpret_cast<uintptr_t>(op.src), op.bytes))
      return Misuse(kInvalidValue, "%s: source %p + %zu bytes is not in a live allocation", op.what, op.src,
                    op.bytes);
    return 0;
  }
  std::vector<void*> params = Params(op);
  std::vector<const void*> pointers;
  op.kernel->pointers(params.data(), &pointers);
  for (const void* p : pointers)
    if (p != nullptr && !Live(s, reinterpret_cast<uintptr_t>(p), 0))
      return Misuse(kIllegalAddress, "%s: address %p among its arguments is not in device or pinned memory",
                    op.kernel->name, p);
  return 0;
}

// Execute runs op now, s.mu held (kernels run one at a time anyway).
CUresult Execute(State& s, const Op& op) {
  if (CUresult r = CheckOp(s, op)) return r;
  if (op.kernel == nullptr) {
    if (op.bytes > 0) std::memmove(op.dst, op.staged.empty() ? op.src : op.staged.data(), op.bytes);
    return 0;
  }
  std::vector<void*> params = Params(op);
  op.kernel->run(op.grid, op.block, op.smem, params.data());
  return 0;
}

// Run runs ops in order; the first failure drops the rest.
CUresult Run(State& s, std::vector<Op>* ops) {
  std::vector<Op> todo;
  todo.swap(*ops);
  for (const Op& op : todo)
    if (CUresult r = Execute(s, op)) return r;
  return 0;
}

// Reads reports whether op reads [p, p + bytes): a copy's source, or an address among a
// kernel's arguments.
bool Reads(const Op& op, uintptr_t p, size_t bytes) {
  auto in = [&](uintptr_t q) { return q >= p && q < p + bytes; };
  if (op.kernel == nullptr) {
    uintptr_t src = reinterpret_cast<uintptr_t>(op.src);
    return op.src_device && src < p + bytes && p < src + op.bytes;
  }
  std::vector<void*> params = Params(op);
  std::vector<const void*> pointers;
  op.kernel->pointers(params.data(), &pointers);
  for (const void* q : pointers)
    if (in(reinterpret_cast<uintptr_t>(q))) return true;
  return false;
}

// Flush runs the work pending on st (null: the legacy stream), then lands the synchronous
// transfers still in flight: the latest they may. Work on st that reads what such a transfer
// writes races with it on a GPU: reported.
CUresult Flush(State& s, Stream* st) {
  if (st != nullptr)
    for (const Op& t : s.legacy)
      for (const Op& op : st->pending)
        if (Reads(op, reinterpret_cast<uintptr_t>(t.dst), t.bytes)) {
          Misuse(0, "%s reads %zu bytes at %p that a cuMemcpyHtoD from pageable memory may still be writing (on "
                 "the legacy stream, which a CU_STREAM_NON_BLOCKING stream does not wait for)",
                 op.kernel != nullptr ? op.kernel->name : op.what, t.bytes, t.dst);
          break;
        }
  if (st != nullptr) st->base += st->pending.size();
  CUresult r = st != nullptr ? Run(s, &st->pending) : 0;
  CUresult l = Run(s, &s.legacy);
  return r != 0 ? r : l;
}

// FlushAll is a device-wide synchronization (what freeing memory implies).
CUresult FlushAll(State& s) {
  CUresult first = 0;
  for (Stream* st : s.streams) {
    CUresult r = Flush(s, st);
    if (first == 0) first = r;
  }
  CUresult l = Flush(s, nullptr);
  return first != 0 ? first : l;
}

// Issue runs op on stream h now (deferred mode: on a created stream, when it is synchronized),
// or records it when h is being captured.
CUresult Issue(CUstream h, Op op) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) return kNotInitialized;
  if (CUresult r = CheckStream(s, h)) return r;
  auto* st = reinterpret_cast<Stream*>(h);
  if (st != nullptr && st->capturing) {
    Stream* origin = st->origin != nullptr ? st->origin : st;
    if (origin->invalidated) return kCaptureInvalidated;
    if (CUresult r = CheckOp(s, op)) {
      origin->invalidated = true;
      return r;
    }
    // A graph's copy node reads or writes its host buffer at every launch: the driver refuses
    // to capture a copy to or from pageable memory.
    const void* host = op.kernel != nullptr || op.bytes == 0 ? nullptr : !op.dst_device ? op.dst : !op.src_device ? op.src : nullptr;
    if (host != nullptr && !HostPinned(s, host, op.bytes)) {
      origin->invalidated = true;
      return Misuse(kCaptureUnsupported, "%s of %zu bytes captured from or to pageable host memory %p", op.what,
                    op.bytes, host);
    }
    origin->graph->ops.push_back(std::move(op));
    if (st != origin) st->issued++;
    return 0;
  }
  if (s.defer > 0 && st != nullptr) {
    if (CUresult r = CheckOp(s, op)) return r;
    st->pending.push_back(std::move(op));
    return 0;
  }
  if (st == nullptr)  // the legacy stream: after its transfers in flight
    if (CUresult r = Run(s, &s.legacy)) return r;
  return Execute(s, op);
}

CUresult Copy(const char* what, void* dst, bool dst_device, const void* src, bool src_device, size_t bytes,
              CUstream h) {
  Op op;
  op.what = what;
  op.dst = dst;
  op.src = src;
  op.bytes = bytes;
  op.dst_device = dst_device;
  op.src_device = src_device;
  return Issue(h, std::move(op));
}

void* Ptr(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

CUresult Allocate(void** out, size_t bytes, bool pinned) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) return kNotInitialized;
  if (out == nullptr || bytes == 0) return kInvalidValue;
  if (!t_current) return Misuse(kInvalidContext, "%s with no current context", pinned ? "cuMemAllocHost" : "cuMemAlloc");
  if (CUresult r = Unsafe(s, pinned ? "cuMemAllocHost" : "cuMemAlloc")) return r;
  if (!pinned && (bytes > s.limit || s.device_bytes > s.limit - bytes)) return cu::CUDA_ERROR_OUT_OF_MEMORY;
  size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);
  if (p == nullptr) return cu::CUDA_ERROR_OUT_OF_MEMORY;
  std::memset(p, 0xff, rounded);  // NaNs
  s.allocations[reinterpret_cast<uintptr_t>(p)] = Allocation{bytes, pinned};
  if (!pinned) s.device_bytes += bytes;
  *out = p;
  return 0;
}

CUresult Free(void* p, bool pinned) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) return kNotInitialized;
  if (p == nullptr) return 0;
  if (CUresult r = FlushAll(s)) return r;
  auto it = s.allocations.find(reinterpret_cast<uintptr_t>(p));
  if (it == s.allocations.end() || it->second.pinned != pinned)
    return Misuse(kInvalidValue, "%s(%p): not a live %s allocation", pinned ? "cuMemFreeHost" : "cuMemFree", p,
                  pinned ? "pinned" : "device");
  if (!pinned) s.device_bytes -= it->second.bytes;
  s.allocations.erase(it);
  std::free(p);
  return 0;
}

}  // namespace

}  // namespace onnxrl_fakecuda

using namespace onnxrl_fakecuda;  // NOLINT: the entry points below are the driver's C names

// EnvInt is the integer in the environment variable name, or def when it is unset.
int EnvInt(const char* name, int def) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : def;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuInit(unsigned flags) {
  if (flags != 0) return kInvalidValue;
  // ONNXRL_FAKECUDA_DEVICES=0: a machine with the driver and no GPU.
  if (EnvInt("ONNXRL_FAKECUDA_DEVICES", 1) <= 0) return cu::CUDA_ERROR_NO_DEVICE;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) {
    if (const char* v = std::getenv("ONNXRL_FAKECUDA_MEM_LIMIT"); v != nullptr && *v != '\0')
      s.limit = static_cast<size_t>(std::strtoull(v, nullptr, 10));
    const char* d = std::getenv("ONNXRL_FAKECUDA_DEFER");
    s.defer = d == nullptr ? 0 : std::strcmp(d, "1") == 0 ? 1 : std::strcmp(d, "2") == 0 ? 2 : 0;
    s.initialized = true;
  }
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return kInvalidValue;
  *version = EnvInt("ONNXRL_FAKECUDA_DRIVER_VERSION", kDriverVersion);  // e.g. 12000: an older driver
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuGetErrorName(CUresult r, const char** name) {
  if (name == nullptr) return kInvalidValue;
  for (const Named& e : kErrors)
    if (e.code == r) {
      *name = e.name;
      return 0;
    }
  *name = nullptr;
  return kInvalidValue;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuGetErrorString(CUresult r, const char** text) {
  if (text == nullptr) return kInvalidValue;
  for (const Named& e : kErrors)
    if (e.code == r) {
      *text = e.text;
      return 0;
    }
  *text = nullptr;
  return kInvalidValue;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuDeviceGetCount(int* count) {
  if (count == nullptr) return kInvalidValue;
  if (!S().initialized) return kNotInitialized;
  *count = 1;
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuDeviceGet(CUdevice* dev, int ordinal) {
  if (dev == nullptr) return kInvalidValue;
  if (!S().initialized) return kNotInitialized;
  if (ordinal != 0) return cu::CUDA_ERROR_INVALID_DEVICE;
  *dev = 0;
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (name == nullptr || len <= 0) return kInvalidValue;
  if (!S().initialized) return kNotInitialized;
  if (dev != 0) return cu::CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, static_cast<size_t>(len), "%s", kDeviceName);
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuDeviceGetAttribute(int* value, int attrib, CUdevice dev) {
  if (value == nullptr) return kInvalidValue;
  if (!S().initialized) return kNotInitialized;
  if (dev != 0) return cu::CUDA_ERROR_INVALID_DEVICE;
  switch (attrib) {
    case 1:  // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
      *value = static_cast<int>(kMaxBlockThreads);
      return 0;
    case 8:  // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK
      *value = kMaxSharedDefault;
      return 0;
    case 10:  // CU_DEVICE_ATTRIBUTE_WARP_SIZE
      *value = 32;
      return 0;
    case cu::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = 1;  // grid-stride launches stay small
      return 0;
    case cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = 9;
      return 0;
    case cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = 0;
      return 0;
    case cu::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *value = kMaxSharedOptin;
      return 0;
    default:
      return Misuse(kInvalidValue, "cuDeviceGetAttribute(%d): an attribute the fake driver does not know", attrib);
  }
}

ONNXRL_FAKECUDA_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  if (ctx == nullptr) return kInvalidValue;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) return kNotInitialized;
  if (dev != 0) return cu::CUDA_ERROR_INVALID_DEVICE;
  s.context_refs++;
  *ctx = reinterpret_cast<CUcontext>(&g_context);
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) return kNotInitialized;
  if (dev != 0) return cu::CUDA_ERROR_INVALID_DEVICE;
  if (s.context_refs == 0) return Misuse(kInvalidContext, "cuDevicePrimaryCtxRelease without a retain");
  s.context_refs--;
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (!S().initialized) return kNotInitialized;
  if (ctx != nullptr && ctx != reinterpret_cast<CUcontext>(&g_context))
    return Misuse(kInvalidContext, "cuCtxSetCurrent of a context that is not the primary one");
  t_current = ctx != nullptr;
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  if (module == nullptr || image == nullptr) return kInvalidValue;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) return kNotInitialized;
  if (!t_current) return Misuse(kInvalidContext, "cuModuleLoadData with no current context");
  auto* m = new Module;
  s.modules.insert(m);
  *module = reinterpret_cast<CUmodule>(m);
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuModuleUnload(CUmodule module) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto* m = reinterpret_cast<Module*>(module);
  if (!s.modules.erase(m)) return Misuse(kInvalidHandle, "cuModuleUnload of a module that is not loaded");
  delete m;
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuModuleGetFunction(CUfunction* fn, CUmodule module, const char* name) {
  if (fn == nullptr || name == nullptr) return kInvalidValue;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.modules.count(reinterpret_cast<Module*>(module)))
    return Misuse(kInvalidHandle, "cuModuleGetFunction(%s) in a module that is not loaded", name);
  const Kernel* k = FindKernel(name);
  if (k == nullptr) return kNotFound;
  *fn = reinterpret_cast<CUfunction>(const_cast<Kernel*>(k));
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuFuncSetAttribute(CUfunction fn, int attrib, int value) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  const Kernel* k = reinterpret_cast<const Kernel*>(fn);
  bool known = false;
  for (const Kernel& x : Kernels()) known = known || &x == k;
  if (!known) return Misuse(kInvalidHandle, "cuFuncSetAttribute of a function that is not a kernel");
  if (attrib != cu::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    return Misuse(kInvalidValue, "cuFuncSetAttribute(%d): an attribute the fake driver does not know", attrib);
  if (value < 0 || value > kMaxSharedOptin)
    return Misuse(kInvalidValue, "cuFuncSetAttribute: %d bytes of dynamic shared memory (at most %d)", value,
                  kMaxSharedOptin);
  s.max_dynamic_smem[k] = value;
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                               unsigned by, unsigned bz, unsigned shared_bytes, CUstream stream,
                                               void** params, void** extra) {
  const Kernel* k = reinterpret_cast<const Kernel*>(fn);
  int max_smem = kMaxSharedDefault;
  {
    State& s = S();
    std::lock_guard<std::mutex> lock(s.mu);
    bool known = false;
    for (const Kernel& x : Kernels()) known = known || &x == k;
    if (!known) return Misuse(kInvalidHandle, "cuLaunchKernel of a function that is not a kernel");
    auto it = s.max_dynamic_smem.find(k);
    if (it != s.max_dynamic_smem.end()) max_smem = it->second;
  }
  if (extra != nullptr) return Misuse(kInvalidValue, "%s: cuLaunchKernel's extra is not emulated", k->name);
  if (gx == 0 || gy == 0 || gz == 0 || gx > 0x7fffffffu || gy > 65535 || gz > 65535)
    return Misuse(kInvalidValue, "%s: grid %u x %u x %u", k->name, gx, gy, gz);
  const unsigned long long threads = 1ull * bx * by * bz;
  if (bx == 0 || by == 0 || bz == 0 || bx > 1024 || by > 1024 || bz > 64 || threads > k->max_threads)
    return Misuse(kInvalidValue, "%s: block %u x %u x %u (at most %u threads)", k->name, bx, by, bz, k->max_threads);
  if (shared_bytes > static_cast<unsigned>(max_smem))
    return Misuse(kInvalidValue, "%s: %u bytes of dynamic shared memory, the function allows %d", k->name,
                  shared_bytes, max_smem);
  if (params == nullptr && !k->param_sizes.empty()) return Misuse(kInvalidValue, "%s: no parameters", k->name);
  Op op;
  op.what = "cuLaunchKernel";
  op.kernel = k;
  op.grid = Dim3{gx, gy, gz};
  op.block = Dim3{bx, by, bz};
  op.smem = shared_bytes;
  // The arguments by value: the caller's variables are gone by the time a graph replays them.
  for (size_t i = 0; i < k->param_sizes.size(); i++) {
    size_t off = (op.args.size() + 15) / 16 * 16;
    op.offsets.push_back(off);
    op.args.resize(off + k->param_sizes[i]);
    if (params[i] == nullptr) return Misuse(kInvalidValue, "%s: parameter %zu is null", k->name, i);
    std::memcpy(op.args.data() + off, params[i], k->param_sizes[i]);
  }
  return Issue(stream, std::move(op));
}

ONNXRL_FAKECUDA_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes) {
  if (p == nullptr) return kInvalidValue;
  void* q = nullptr;
  CUresult r = Allocate(&q, bytes, false);
  if (r == 0) *p = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(q));
  return r;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuMemFree_v2(CUdeviceptr p) { return Free(Ptr(p), false); }

ONNXRL_FAKECUDA_EXPORT CUresult cuMemAllocHost_v2(void** p, size_t bytes) { return Allocate(p, bytes, true); }

ONNXRL_FAKECUDA_EXPORT CUresult cuMemFreeHost(void* p) { return Free(p, true); }

// cuMemHostRegister_v2 records a host range as page-locked; like the driver it refuses a range
// that overlaps one already registered, and flags it does not know.
ONNXRL_FAKECUDA_EXPORT CUresult cuMemHostRegister_v2(void* p, size_t bytes, unsigned flags) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) return kNotInitialized;
  if (p == nullptr || bytes == 0 || (flags & ~0xfu) != 0) return kInvalidValue;
  if (!t_current) return Misuse(kInvalidContext, "cuMemHostRegister with no current context");
  if (CUresult r = Unsafe(s, "cuMemHostRegister")) return r;
  const auto base = reinterpret_cast<uintptr_t>(p);
  auto next = s.registered.lower_bound(base);
  if (next != s.registered.end() && next->first < base + bytes)
    return Misuse(cu::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "cuMemHostRegister(%p, %zu): overlaps %p", p, bytes,
                  reinterpret_cast<void*>(next->first));
  if (next != s.registered.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second > base)
      return Misuse(cu::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "cuMemHostRegister(%p, %zu): overlaps %p", p,
                    bytes, reinterpret_cast<void*>(prev->first));
  }
  s.registered[base] = bytes;
  return 0;
}

// cuMemHostUnregister lets the work issued so far finish (it may still read the range), then
// forgets the range; p must be a registered range's base.
ONNXRL_FAKECUDA_EXPORT CUresult cuMemHostUnregister(void* p) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) return kNotInitialized;
  if (CUresult r = Unsafe(s, "cuMemHostUnregister")) return r;
  auto it = s.registered.find(reinterpret_cast<uintptr_t>(p));
  if (it == s.registered.end())
    return Misuse(cu::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "cuMemHostUnregister(%p): not a registered range", p);
  if (CUresult r = FlushAll(s)) return r;
  s.registered.erase(it);
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
  {
    State& s = S();
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.initialized) return kNotInitialized;
    if (!t_current) return Misuse(kInvalidContext, "cuMemcpyHtoD with no current context");
    if (CUresult r = Unsafe(s, "cuMemcpyHtoD (synchronous)")) return r;
    if (s.defer == 2 && bytes > 0 && !Live(s, reinterpret_cast<uintptr_t>(src), bytes)) {
      // From pageable memory: staged now, landing later (see the top of this file).
      Op op;
      op.what = "cuMemcpyHtoD";
      op.dst = Ptr(dst);
      op.dst_device = true;
      op.bytes = bytes;
      if (CUresult r = CheckOp(s, op)) return r;
      op.staged.assign(static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(src) + bytes);
      s.legacy.push_back(std::move(op));
      return 0;
    }
  }
  return Copy("cuMemcpyHtoD", Ptr(dst), true, src, false, bytes, nullptr);
}

ONNXRL_FAKECUDA_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, CUstream st) {
  return Copy("cuMemcpyHtoDAsync", Ptr(dst), true, src, false, bytes, st);
}

ONNXRL_FAKECUDA_EXPORT CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, CUstream st) {
  return Copy("cuMemcpyDtoHAsync", dst, false, Ptr(src), true, bytes, st);
}

ONNXRL_FAKECUDA_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream st) {
  return Copy("cuMemcpyDtoDAsync", Ptr(dst), true, Ptr(src), true, bytes, st);
}

ONNXRL_FAKECUDA_EXPORT CUresult cuStreamCreate(CUstream* stream, unsigned flags) {
  if (stream == nullptr || flags > cu::CU_STREAM_NON_BLOCKING) return kInvalidValue;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) return kNotInitialized;
  if (!t_current) return Misuse(kInvalidContext, "cuStreamCreate with no current context");
  auto* st = new Stream;
  s.streams.insert(st);
  *stream = reinterpret_cast<CUstream>(st);
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuStreamDestroy_v2(CUstream stream) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto* st = reinterpret_cast<Stream*>(stream);
  if (!s.streams.count(st)) return Misuse(kInvalidHandle, "cuStreamDestroy of a stream that is not live");
  CUresult r = Flush(s, st);  // its work completes first
  s.streams.erase(st);
  if (st->capturing) {
    Misuse(0, "cuStreamDestroy of a stream being captured");
    if (st->mode == kModeGlobal) s.global_captures--;
    if (t_capture == st) t_capture = nullptr;
  }
  delete st;
  return r;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuStreamSynchronize(CUstream stream) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) return kNotInitialized;
  if (CUresult r = CheckStream(s, stream)) return r;
  auto* st = reinterpret_cast<Stream*>(stream);
  if (st != nullptr && st->capturing) {
    st->invalidated = true;
    return Misuse(kCaptureUnsupported, "cuStreamSynchronize of a stream being captured (the capture is invalidated)");
  }
  return Flush(s, st);
}

ONNXRL_FAKECUDA_EXPORT CUresult cuStreamBeginCapture_v2(CUstream stream, int mode) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) return kNotInitialized;
  auto* st = reinterpret_cast<Stream*>(stream);
  if (st == nullptr) return Misuse(kCaptureUnsupported, "cuStreamBeginCapture of the legacy stream");
  if (CUresult r = CheckStream(s, stream)) return r;
  if (mode < 0 || mode > 2) return kInvalidValue;
  if (st->capturing) return Misuse(kIllegalState, "cuStreamBeginCapture of a stream already being captured");
  if (mode == kModeThreadLocal || mode == kModeGlobal) {
    if (t_capture != nullptr) return Misuse(kIllegalState, "a second capture on one thread (not emulated)");
    t_capture = st;
  }
  if (mode == kModeGlobal) s.global_captures++;
  st->capturing = true;
  st->invalidated = false;
  st->mode = mode;
  st->thread = std::this_thread::get_id();
  st->graph = std::make_unique<Graph>();
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  if (graph == nullptr) return kInvalidValue;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) return kNotInitialized;
  if (CUresult r = CheckStream(s, stream)) return r;
  auto* st = reinterpret_cast<Stream*>(stream);
  if (st == nullptr || !st->capturing) return Misuse(kIllegalState, "cuStreamEndCapture of a stream not being captured");
  if (st->mode != 2 && st->thread != std::this_thread::get_id())
    return Misuse(kCaptureWrongThread, "cuStreamEndCapture on another thread than cuStreamBeginCapture's");
  if (st->origin != nullptr) return Misuse(kIllegalState, "cuStreamEndCapture of a stream that joined another's capture");
  st->capturing = false;
  if (st->mode == kModeGlobal) s.global_captures--;
  if (t_capture == st) t_capture = nullptr;
  std::unique_ptr<Graph> g = std::move(st->graph);
  *graph = nullptr;
  bool unjoined = false;
  for (Stream* x : s.streams) {
    if (x->origin != st) continue;
    unjoined = unjoined || x->joined != x->issued;
    x->capturing = false;
    x->origin = nullptr;
    x->issued = x->joined = 0;
  }
  if (st->invalidated) return kCaptureInvalidated;
  if (unjoined) return Misuse(kCaptureUnjoined, "cuStreamEndCapture with work of another stream not joined back");
  s.graphs.insert(g.get());
  *graph = reinterpret_cast<CUgraph>(g.release());
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long) {
  if (exec == nullptr) return kInvalidValue;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto* g = reinterpret_cast<Graph*>(graph);
  if (!s.graphs.count(g)) return Misuse(kInvalidValue, "cuGraphInstantiate of a graph that is not live");
  auto* x = new GraphExec{g->ops};
  s.execs.insert(x);
  *exec = reinterpret_cast<CUgraphExec>(x);
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) return kNotInitialized;
  auto* x = reinterpret_cast<GraphExec*>(exec);
  if (!s.execs.count(x)) return Misuse(kInvalidValue, "cuGraphLaunch of a graph instance that is not live");
  if (CUresult r = CheckStream(s, stream)) return r;
  auto* st = reinterpret_cast<Stream*>(stream);
  if (st != nullptr && st->capturing) return Misuse(kInvalidValue, "cuGraphLaunch into a capture (not emulated)");
  if (s.defer > 0 && st != nullptr) {
    st->pending.insert(st->pending.end(), x->ops.begin(), x->ops.end());
    return 0;
  }
  for (const Op& op : x->ops)
    if (CUresult r = Execute(s, op)) return r;
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuEventCreate(CUevent* event, unsigned flags) {
  if (event == nullptr || (flags & ~3u) != 0) return kInvalidValue;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) return kNotInitialized;
  if (!t_current) return Misuse(kInvalidContext, "cuEventCreate with no current context");
  auto* e = new Event;
  s.events.insert(e);
  *event = reinterpret_cast<CUevent>(e);
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto* e = reinterpret_cast<Event*>(event);
  if (!s.events.count(e)) return Misuse(kInvalidHandle, "cuEventRecord of an event that is not live");
  if (CUresult r = CheckStream(s, stream)) return r;
  auto* st = reinterpret_cast<Stream*>(stream);
  if (st != nullptr && st->capturing) {
    e->capture = st->origin != nullptr ? st->origin : st;
    e->captured = st->issued;
    e->stream = st;
    e->recorded = true;
    return 0;
  }
  e->capture = nullptr;
  e->stream = st;
  e->target = st != nullptr ? st->base + st->pending.size() : 0;
  e->recorded = true;
  return 0;
}

// cuStreamWaitEvent: in a capture, the fork and join of another stream (a stream that waits
// on an event recorded into a capture joins it; the origin waiting on a joined stream's event
// joins that stream's work back); outside one, the event's stream runs up to it first.
ONNXRL_FAKECUDA_EXPORT CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) return kNotInitialized;
  auto* e = reinterpret_cast<Event*>(event);
  if (!s.events.count(e)) return Misuse(kInvalidHandle, "cuStreamWaitEvent on an event that is not live");
  if (flags != 0) return kInvalidValue;
  if (CUresult r = CheckStream(s, stream)) return r;
  auto* st = reinterpret_cast<Stream*>(stream);
  if (e->capture != nullptr) {
    Stream* origin = e->capture;
    if (!origin->capturing) return Misuse(kIllegalState, "cuStreamWaitEvent on an event of a capture that has ended");
    if (st == nullptr) return Misuse(kCaptureIsolation, "the legacy stream waits on an event of a capture");
    if (st == origin) {
      if (e->stream != origin) e->stream->joined = std::max(e->stream->joined, e->captured);
      return 0;
    }
    if (!st->capturing) {
      st->capturing = true;
      st->origin = origin;
      st->issued = st->joined = 0;
      return 0;
    }
    if (st->origin != origin) return Misuse(kCaptureIsolation, "a stream waits on an event of another capture");
    return 0;
  }
  if (st != nullptr && st->capturing)
    return Misuse(kCaptureIsolation, "a capturing stream waits on an event recorded outside the capture");
  if (!e->recorded || e->stream == nullptr || !s.streams.count(e->stream)) return 0;
  Stream* from = e->stream;
  if (e->target > from->base) {
    size_t n = std::min(e->target - from->base, from->pending.size());
    std::vector<Op> head(std::make_move_iterator(from->pending.begin()),
                         std::make_move_iterator(from->pending.begin() + static_cast<std::ptrdiff_t>(n)));
    from->pending.erase(from->pending.begin(), from->pending.begin() + static_cast<std::ptrdiff_t>(n));
    from->base += n;
    if (CUresult r = Run(s, &head)) return r;
  }
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuEventSynchronize(CUevent event) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto* e = reinterpret_cast<Event*>(event);
  if (!s.events.count(e)) return Misuse(kInvalidHandle, "cuEventSynchronize of an event that is not live");
  if (!e->recorded || e->stream == nullptr || !s.streams.count(e->stream)) return Run(s, &s.legacy);
  Stream* st = e->stream;
  if (e->target > st->base) {
    size_t n = std::min(e->target - st->base, st->pending.size());
    std::vector<Op> head(std::make_move_iterator(st->pending.begin()),
                         std::make_move_iterator(st->pending.begin() + static_cast<std::ptrdiff_t>(n)));
    st->pending.erase(st->pending.begin(), st->pending.begin() + static_cast<std::ptrdiff_t>(n));
    st->base += n;
    if (CUresult r = Run(s, &head)) return r;
  }
  return Run(s, &s.legacy);
}

ONNXRL_FAKECUDA_EXPORT CUresult cuEventDestroy_v2(CUevent event) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto* e = reinterpret_cast<Event*>(event);
  if (!s.events.erase(e)) return Misuse(kInvalidHandle, "cuEventDestroy of an event that is not live");
  delete e;
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuGraphExecDestroy(CUgraphExec exec) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto* x = reinterpret_cast<GraphExec*>(exec);
  if (!s.execs.erase(x)) return Misuse(kInvalidValue, "cuGraphExecDestroy of a graph instance that is not live");
  delete x;
  return 0;
}

ONNXRL_FAKECUDA_EXPORT CUresult cuGraphDestroy(CUgraph graph) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto* g = reinterpret_cast<Graph*>(graph);
  if (!s.graphs.erase(g)) return Misuse(kInvalidValue, "cuGraphDestroy of a graph that is not live");
  delete g;
  return 0;
}

// Every entry point has the type the backend binds it with.
#define ONNXRL_FAKECUDA_SAME_TYPE(fn) \
  static_assert(std::is_same_v<decltype(&fn), decltype(cu::DriverApi::fn)>, #fn "'s type differs from cuda_api.h's")
ONNXRL_FAKECUDA_SAME_TYPE(cuInit);
ONNXRL_FAKECUDA_SAME_TYPE(cuDriverGetVersion);
ONNXRL_FAKECUDA_SAME_TYPE(cuGetErrorName);
ONNXRL_FAKECUDA_SAME_TYPE(cuGetErrorString);
ONNXRL_FAKECUDA_SAME_TYPE(cuDeviceGetCount);
ONNXRL_FAKECUDA_SAME_TYPE(cuDeviceGet);
ONNXRL_FAKECUDA_SAME_TYPE(cuDeviceGetName);
ONNXRL_FAKECUDA_SAME_TYPE(cuDeviceGetAttribute);
ONNXRL_FAKECUDA_SAME_TYPE(cuDevicePrimaryCtxRetain);
ONNXRL_FAKECUDA_SAME_TYPE(cuDevicePrimaryCtxRelease_v2);
ONNXRL_FAKECUDA_SAME_TYPE(cuCtxSetCurrent);
ONNXRL_FAKECUDA_SAME_TYPE(cuModuleLoadData);
ONNXRL_FAKECUDA_SAME_TYPE(cuModuleUnload);
ONNXRL_FAKECUDA_SAME_TYPE(cuModuleGetFunction);
ONNXRL_FAKECUDA_SAME_TYPE(cuFuncSetAttribute);
ONNXRL_FAKECUDA_SAME_TYPE(cuLaunchKernel);
ONNXRL_FAKECUDA_SAME_TYPE(cuMemAlloc_v2);
ONNXRL_FAKECUDA_SAME_TYPE(cuMemFree_v2);
ONNXRL_FAKECUDA_SAME_TYPE(cuMemAllocHost_v2);
ONNXRL_FAKECUDA_SAME_TYPE(cuMemFreeHost);
ONNXRL_FAKECUDA_SAME_TYPE(cuMemHostRegister_v2);
ONNXRL_FAKECUDA_SAME_TYPE(cuMemHostUnregister);
ONNXRL_FAKECUDA_SAME_TYPE(cuMemcpyHtoD_v2);
ONNXRL_FAKECUDA_SAME_TYPE(cuMemcpyHtoDAsync_v2);
ONNXRL_FAKECUDA_SAME_TYPE(cuMemcpyDtoHAsync_v2);
ONNXRL_FAKECUDA_SAME_TYPE(cuMemcpyDtoDAsync_v2);
ONNXRL_FAKECUDA_SAME_TYPE(cuStreamCreate);
ONNXRL_FAKECUDA_SAME_TYPE(cuStreamDestroy_v2);
ONNXRL_FAKECUDA_SAME_TYPE(cuStreamSynchronize);
ONNXRL_FAKECUDA_SAME_TYPE(cuStreamBeginCapture_v2);
ONNXRL_FAKECUDA_SAME_TYPE(cuStreamEndCapture);
ONNXRL_FAKECUDA_SAME_TYPE(cuGraphInstantiateWithFlags);
ONNXRL_FAKECUDA_SAME_TYPE(cuGraphLaunch);
ONNXRL_FAKECUDA_SAME_TYPE(cuGraphExecDestroy);
ONNXRL_FAKECUDA_SAME_TYPE(cuGraphDestroy);
ONNXRL_FAKECUDA_SAME_TYPE(cuEventCreate);
ONNXRL_FAKECUDA_SAME_TYPE(cuEventRecord);
ONNXRL_FAKECUDA_SAME_TYPE(cuStreamWaitEvent);
ONNXRL_FAKECUDA_SAME_TYPE(cuEventSynchronize);
ONNXRL_FAKECUDA_SAME_TYPE(cuEventDestroy_v2);
