// The fake CUDA driver (libonnxrl_fakecuda.so) through the backend's own loader: it binds as
// both the driver and NVRTC, compiles only the source it runs, and behaves as the driver does
// where the backend depends on it: stream capture records (and copies the arguments) without
// running anything, allocations and synchronizations refused while capturing, the memory
// limit, launch limits, bad addresses and frees. Deferred mode (set here before cuInit): work
// issued on a stream runs at its synchronization; with the argument "late-transfers"
// (ONNXRL_FAKECUDA_DEFER=2), a synchronous copy from pageable memory lands after the other
// stream's work. CTest points ONNXRL_CUDA_DRIVER_LIBRARY and ONNXRL_NVRTC_LIBRARY at the
// library; the refusals print "onnxrl fakecuda: " lines on purpose.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda/compiler.h"
#include "cuda/device_args.h"
#include "ort.h"

using namespace onnxrl_ep;

namespace {

int failures = 0;

void Expect(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAIL %s\n", what.c_str());
    failures++;
  }
}

void ExpectCode(cu::CUresult got, cu::CUresult want, const std::string& what) {
  if (got != want) {
    std::printf("FAIL %s: CUresult %d, want %d\n", what.c_str(), got, want);
    failures++;
  }
}

constexpr cu::CUresult kInvalidValue = 1, kInvalidContext = 201, kNotFound = 500, kIllegalAddress = 700,
                       kCaptureUnsupported = 900, kCaptureInvalidated = 901, kCaptureUnjoined = 904;

}  // namespace

// LateTransfers: with ONNXRL_FAKECUDA_DEFER=2, work on a non-blocking stream does not wait for
// a synchronous copy from pageable memory (reported on stderr as a race).
int LateTransfers(const cu::DriverApi& a) {
  cu::CUcontext ctx = nullptr;
  ExpectCode(a.cuDevicePrimaryCtxRetain(&ctx, 0), 0, "cuDevicePrimaryCtxRetain");
  ExpectCode(a.cuCtxSetCurrent(ctx), 0, "cuCtxSetCurrent");
  cu::CUdeviceptr src = 0, dst = 0;
  ExpectCode(a.cuMemAlloc_v2(&src, 16), 0, "cuMemAlloc");
  ExpectCode(a.cuMemAlloc_v2(&dst, 16), 0, "cuMemAlloc");
  cu::CUstream st = nullptr;
  ExpectCode(a.cuStreamCreate(&st, cu::CU_STREAM_NON_BLOCKING), 0, "cuStreamCreate");
  float host[4] = {1, 2, 3, 4}, back[4] = {0, 0, 0, 0};
  ExpectCode(a.cuMemcpyHtoD_v2(src, host, sizeof host), 0, "cuMemcpyHtoD");
  host[0] = 9;  // staged already: the transfer carries 1
  ExpectCode(a.cuMemcpyDtoDAsync_v2(dst, src, sizeof host, st), 0, "cuMemcpyDtoDAsync");
  ExpectCode(a.cuStreamSynchronize(st), 0, "cuStreamSynchronize");
  ExpectCode(a.cuMemcpyDtoHAsync_v2(back, dst, sizeof back, nullptr), 0, "cuMemcpyDtoHAsync");
  Expect(std::isnan(back[0]), "the stream's copy ran before the synchronous transfer landed");
  ExpectCode(a.cuMemcpyDtoHAsync_v2(back, src, sizeof back, nullptr), 0, "cuMemcpyDtoHAsync");
  Expect(back[0] == 1 && back[3] == 4, "the synchronous transfer landed, with the bytes staged when it was issued");
  ExpectCode(a.cuStreamDestroy_v2(st), 0, "cuStreamDestroy");
  ExpectCode(a.cuMemFree_v2(src), 0, "cuMemFree");
  ExpectCode(a.cuMemFree_v2(dst), 0, "cuMemFree");
  std::printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  const bool late = argc > 1 && std::string(argv[1]) == "late-transfers";
  if (std::getenv("ONNXRL_CUDA_DRIVER_LIBRARY") == nullptr || std::getenv("ONNXRL_NVRTC_LIBRARY") == nullptr) {
    std::printf("FAIL set ONNXRL_CUDA_DRIVER_LIBRARY and ONNXRL_NVRTC_LIBRARY to libonnxrl_fakecuda.so\n");
    return 1;
  }
  setenv("ONNXRL_FAKECUDA_DEFER", late ? "2" : "1", 1);
  setenv("ONNXRL_FAKECUDA_MEM_LIMIT", "1048576", 1);
  setenv("ONNXRL_CUDA_CACHE", "/nonexistent/onnxrl-fakecuda-test", 1);  // nothing here writes the cache
  const Driver* drv = nullptr;
  const Nvrtc* nvrtc = nullptr;
  try {
    drv = &LoadDriver();
    nvrtc = &LoadNvrtc(drv->version);
  } catch (Error& e) {
    std::printf("FAIL loading the fake driver: %s\n", e.msg.c_str());
    return 1;
  }
  const cu::DriverApi& a = drv->api;
  if (late) return LateTransfers(a);
  Expect(drv->version == 13000 && drv->devices == 1, "driver 13.0 with one device");
  Expect(nvrtc->major == 12 && nvrtc->minor == 9, "NVRTC 12.9");
  Expect(Target(*nvrtc, 90) == "sm_90", "a CUBIN for sm_90");
  try {
    Image img = CompileSource(*nvrtc, DeviceSource(), "sm_90", false);
    Expect(!img.data.empty() && !img.ptx, "an image of the kernels");
  } catch (Error& e) {
    Expect(false, "compiling the kernels: " + e.msg);
  }
  try {
    CompileSource(*nvrtc, "extern \"C\" __global__ void other() {}", "sm_90", false);
    Expect(false, "another source compiled");
  } catch (Error& e) {
    Expect(e.msg.find("rebuild") != std::string::npos, "another source's error says to rebuild: " + e.msg);
  }

  cu::CUdeviceptr d = 0;
  ExpectCode(a.cuMemAlloc_v2(&d, 64), kInvalidContext, "cuMemAlloc with no current context");
  cu::CUcontext ctx = nullptr;
  ExpectCode(a.cuDevicePrimaryCtxRetain(&ctx, 0), 0, "cuDevicePrimaryCtxRetain");
  ExpectCode(a.cuCtxSetCurrent(ctx), 0, "cuCtxSetCurrent");
  cu::CUmodule mod = nullptr;
  ExpectCode(a.cuModuleLoadData(&mod, "image"), 0, "cuModuleLoadData");
  cu::CUfunction fill = nullptr, gemm = nullptr, mlp = nullptr, none = nullptr;
  ExpectCode(a.cuModuleGetFunction(&fill, mod, "onnxrl_fill"), 0, "onnxrl_fill");
  ExpectCode(a.cuModuleGetFunction(&gemm, mod, "onnxrl_gemm"), 0, "onnxrl_gemm");
  ExpectCode(a.cuModuleGetFunction(&mlp, mod, "onnxrl_mlp"), 0, "onnxrl_mlp");
  ExpectCode(a.cuModuleGetFunction(&none, mod, "onnxrl_none"), kNotFound, "an unknown kernel");

  // Memory: the limit, frees, copies outside allocations.
  ExpectCode(a.cuMemAlloc_v2(&d, 2 << 20), cu::CUDA_ERROR_OUT_OF_MEMORY, "past ONNXRL_FAKECUDA_MEM_LIMIT");
  ExpectCode(a.cuMemAlloc_v2(&d, 16 * sizeof(float)), 0, "cuMemAlloc");
  float* pin = nullptr;
  ExpectCode(a.cuMemAllocHost_v2(reinterpret_cast<void**>(&pin), 16 * sizeof(float)), 0, "cuMemAllocHost");
  float host[16] = {0};
  ExpectCode(a.cuMemcpyHtoD_v2(d + 8, host, 16 * sizeof(float)), kInvalidValue, "a copy past the allocation's end");
  ExpectCode(a.cuMemcpyDtoHAsync_v2(host, reinterpret_cast<uintptr_t>(host), 4, nullptr), kInvalidValue,
             "a copy from host memory as device memory");
  cu::CUdeviceptr spare = 0;
  ExpectCode(a.cuMemAlloc_v2(&spare, 4), 0, "cuMemAlloc");
  ExpectCode(a.cuMemFree_v2(spare), 0, "cuMemFree");
  ExpectCode(a.cuMemFree_v2(spare), kInvalidValue, "a second cuMemFree");

  cu::CUstream st = nullptr;
  ExpectCode(a.cuStreamCreate(&st, cu::CU_STREAM_NON_BLOCKING), 0, "cuStreamCreate");

  // Deferred: nothing runs before the synchronization.
  long long n = 16;
  float v = 1.5f;
  void* fill_args[] = {&d, &n, &v};
  ExpectCode(a.cuLaunchKernel(fill, 1, 1, 1, 64, 1, 1, 0, st, fill_args, nullptr), 0, "onnxrl_fill");
  ExpectCode(a.cuMemcpyDtoHAsync_v2(pin, d, 16 * sizeof(float), st), 0, "cuMemcpyDtoHAsync");
  Expect(std::isnan(pin[0]), "pinned memory starts as NaNs and is not written before the synchronization");
  ExpectCode(a.cuStreamSynchronize(st), 0, "cuStreamSynchronize");
  Expect(pin[0] == 1.5f && pin[15] == 1.5f, "the fill and the copy ran at the synchronization");

  // Capture: recorded, nothing run; the arguments copied when recorded.
  ExpectCode(a.cuStreamBeginCapture_v2(st, cu::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), 0, "cuStreamBeginCapture");
  v = 2.5f;
  ExpectCode(a.cuLaunchKernel(fill, 1, 1, 1, 64, 1, 1, 0, st, fill_args, nullptr), 0, "a captured launch");
  ExpectCode(a.cuMemcpyDtoHAsync_v2(pin, d, 16 * sizeof(float), st), 0, "a captured copy");
  v = 9.0f;
  cu::CUgraph g = nullptr;
  ExpectCode(a.cuStreamEndCapture(st, &g), 0, "cuStreamEndCapture");
  ExpectCode(a.cuStreamSynchronize(st), 0, "cuStreamSynchronize");
  Expect(pin[0] == 1.5f, "nothing ran while capturing");
  cu::CUgraphExec x = nullptr;
  ExpectCode(a.cuGraphInstantiateWithFlags(&x, g, 0), 0, "cuGraphInstantiate");
  ExpectCode(a.cuGraphDestroy(g), 0, "cuGraphDestroy");
  ExpectCode(a.cuGraphLaunch(x, st), 0, "cuGraphLaunch");
  ExpectCode(a.cuStreamSynchronize(st), 0, "cuStreamSynchronize");
  Expect(pin[0] == 2.5f, "the replay uses the arguments as they were when captured");

  // A second stream forked into the capture by an event and joined back by another: its work
  // is in the graph; not joined back, the capture fails.
  {
    cu::CUstream side = nullptr;
    cu::CUevent fork = nullptr, join = nullptr;
    ExpectCode(a.cuStreamCreate(&side, cu::CU_STREAM_NON_BLOCKING), 0, "cuStreamCreate");
    ExpectCode(a.cuEventCreate(&fork, cu::CU_EVENT_DISABLE_TIMING), 0, "cuEventCreate");
    ExpectCode(a.cuEventCreate(&join, cu::CU_EVENT_DISABLE_TIMING), 0, "cuEventCreate");
    for (bool rejoin : {true, false}) {
      ExpectCode(a.cuStreamBeginCapture_v2(st, cu::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), 0, "cuStreamBeginCapture");
      v = 3.5f;
      ExpectCode(a.cuLaunchKernel(fill, 1, 1, 1, 64, 1, 1, 0, st, fill_args, nullptr), 0, "a captured launch");
      ExpectCode(a.cuEventRecord(fork, st), 0, "cuEventRecord into the capture");
      ExpectCode(a.cuStreamWaitEvent(side, fork, 0), 0, "the side stream joins the capture");
      ExpectCode(a.cuMemcpyDtoHAsync_v2(pin, d, 16 * sizeof(float), side), 0, "a copy on the side stream");
      ExpectCode(a.cuEventRecord(join, side), 0, "cuEventRecord on the side stream");
      if (rejoin) ExpectCode(a.cuStreamWaitEvent(st, join, 0), 0, "the origin joins the side stream back");
      g = nullptr;
      ExpectCode(a.cuStreamEndCapture(st, &g), rejoin ? 0 : kCaptureUnjoined, "cuStreamEndCapture");
      if (!rejoin) {
        Expect(g == nullptr, "no graph from a capture with a fork not joined back");
        continue;
      }
      cu::CUgraphExec fx = nullptr;
      ExpectCode(a.cuGraphInstantiateWithFlags(&fx, g, 0), 0, "cuGraphInstantiate");
      ExpectCode(a.cuGraphDestroy(g), 0, "cuGraphDestroy");
      ExpectCode(a.cuGraphLaunch(fx, st), 0, "cuGraphLaunch");
      ExpectCode(a.cuStreamSynchronize(st), 0, "cuStreamSynchronize");
      Expect(pin[0] == 3.5f, "the side stream's copy is in the graph, after the fill");
      ExpectCode(a.cuGraphExecDestroy(fx), 0, "cuGraphExecDestroy");
    }
    ExpectCode(a.cuLaunchKernel(fill, 1, 1, 1, 64, 1, 1, 0, side, fill_args, nullptr), 0,
               "the side stream is its own again after the capture");
    ExpectCode(a.cuStreamSynchronize(side), 0, "cuStreamSynchronize");
    ExpectCode(a.cuEventDestroy_v2(fork), 0, "cuEventDestroy");
    ExpectCode(a.cuEventDestroy_v2(join), 0, "cuEventDestroy");
    ExpectCode(a.cuStreamDestroy_v2(side), 0, "cuStreamDestroy");
  }

  // Refused while capturing: allocations, synchronous copies, synchronizing the stream.
  ExpectCode(a.cuStreamBeginCapture_v2(st, cu::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), 0, "cuStreamBeginCapture");
  ExpectCode(a.cuMemAlloc_v2(&spare, 4), kCaptureUnsupported, "cuMemAlloc while capturing");
  g = nullptr;
  ExpectCode(a.cuStreamEndCapture(st, &g), kCaptureInvalidated, "the capture after a cuMemAlloc");
  Expect(g == nullptr, "no graph from an invalidated capture");
  ExpectCode(a.cuStreamBeginCapture_v2(st, cu::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), 0, "cuStreamBeginCapture");
  ExpectCode(a.cuMemcpyHtoD_v2(d, host, 4), kCaptureUnsupported, "cuMemcpyHtoD while capturing");
  ExpectCode(a.cuStreamEndCapture(st, &g), kCaptureInvalidated, "the capture after a cuMemcpyHtoD");
  ExpectCode(a.cuStreamBeginCapture_v2(st, cu::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), 0, "cuStreamBeginCapture");
  ExpectCode(a.cuStreamSynchronize(st), kCaptureUnsupported, "cuStreamSynchronize while capturing");
  ExpectCode(a.cuStreamEndCapture(st, &g), kCaptureInvalidated, "the capture after a cuStreamSynchronize");

  // Launch limits and addresses.
  cu::CUdeviceptr bad = reinterpret_cast<uintptr_t>(host);
  void* bad_args[] = {&bad, &n, &v};
  ExpectCode(a.cuLaunchKernel(fill, 1, 1, 1, 64, 1, 1, 0, st, bad_args, nullptr), kIllegalAddress,
             "a kernel given a host address");
  ExpectCode(a.cuLaunchKernel(fill, 1, 1, 1, 2048, 1, 1, 0, st, fill_args, nullptr), kInvalidValue,
             "a block of 2048 threads");
  ExpectCode(a.cuLaunchKernel(fill, 1, 70000, 1, 64, 1, 1, 0, st, fill_args, nullptr), kInvalidValue,
             "a grid 70000 high");
  int m = 0, zero = 0;
  long long ld = 1;
  float f = 0;
  cu::CUdeviceptr null = 0;
  void* gemm_args[] = {&d, &ld, &d, &ld, &null, &d, &ld, &m, &m, &m, &zero, &zero, &f, &f};
  ExpectCode(a.cuLaunchKernel(gemm, 1, 1, 1, 512, 1, 1, 0, st, gemm_args, nullptr), kInvalidValue,
             "onnxrl_gemm past __launch_bounds__(256)");
  ExpectCode(a.cuLaunchKernel(gemm, 1, 1, 1, 256, 1, 1, 0, st, gemm_args, nullptr), 0, "onnxrl_gemm, M = 0");
  devargs::MlpDesc desc{};
  desc.rows = 4;
  desc.width = 4;
  desc.w[0] = bad;  // past layers: not an argument
  void* mlp_args[] = {&d, &m, &desc};
  ExpectCode(a.cuLaunchKernel(mlp, 1, 1, 1, 256, 1, 1, 64 * 1024, st, mlp_args, nullptr), kInvalidValue,
             "64 KiB of dynamic shared memory without the attribute");
  ExpectCode(a.cuFuncSetAttribute(mlp, cu::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024), 0,
             "cuFuncSetAttribute");
  ExpectCode(a.cuLaunchKernel(mlp, 1, 1, 1, 256, 1, 1, 64 * 1024, st, mlp_args, nullptr), 0,
             "64 KiB of dynamic shared memory with the attribute");
  desc.layers = 1;
  ExpectCode(a.cuLaunchKernel(mlp, 1, 1, 1, 256, 1, 1, 0, st, mlp_args, nullptr), kIllegalAddress,
             "an MlpDesc holding a host address");
  ExpectCode(a.cuStreamSynchronize(st), 0, "cuStreamSynchronize");

  // Freeing memory waits for the work that uses it.
  v = 4.0f;
  ExpectCode(a.cuLaunchKernel(fill, 1, 1, 1, 64, 1, 1, 0, st, fill_args, nullptr), 0, "onnxrl_fill");
  ExpectCode(a.cuMemcpyDtoHAsync_v2(pin, d, 16 * sizeof(float), st), 0, "cuMemcpyDtoHAsync");
  ExpectCode(a.cuMemFree_v2(d), 0, "cuMemFree");
  Expect(pin[3] == 4.0f, "cuMemFree ran the pending work first");

  ExpectCode(a.cuGraphExecDestroy(x), 0, "cuGraphExecDestroy");
  ExpectCode(a.cuStreamDestroy_v2(st), 0, "cuStreamDestroy");
  ExpectCode(a.cuMemFreeHost(pin), 0, "cuMemFreeHost");
  ExpectCode(a.cuModuleUnload(mod), 0, "cuModuleUnload");
  ExpectCode(a.cuDevicePrimaryCtxRelease_v2(0), 0, "cuDevicePrimaryCtxRelease");
  std::printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
