// NVRTC as the backend binds it (src/cuda/cuda_api.h's NvrtcApi), for the fake driver: a
// "compilation" checks that the source is the kernels this library runs (the text
// device_source.cc embeds, built from the same kernels.h and device.cuh) and yields a small
// placeholder image, which the fake cuModuleLoadData accepts. Version 12.9, architectures up to
// sm_90 (the fake device's), so the backend asks for a CUBIN. The backend caches that image
// under a name a real NVRTC 12.9 would give its CUBIN, so compiling needs ONNXRL_CUDA_CACHE
// set (to a scratch directory): the placeholder never lands in the user's cache.
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "cuda/compiler.h"
#include "cuda/cuda_api.h"

#define ONNXRL_FAKECUDA_EXPORT extern "C" __attribute__((visibility("default")))

namespace cu = onnxrl_ep::cu;
using cu::nvrtcProgram;
using cu::nvrtcResult;

namespace {

// nvrtcResult values (nvrtc.h).
constexpr nvrtcResult kOutOfMemory = 1;
constexpr nvrtcResult kInvalidInput = 3;
constexpr nvrtcResult kInvalidProgram = 4;
constexpr nvrtcResult kCompilation = 6;

constexpr int kArchs[] = {75, 80, 86, 89, 90};

struct Program {
  std::string src, log, image;
  bool compiled = false;
};

Program* P(nvrtcProgram p) { return reinterpret_cast<Program*>(p); }

}  // namespace

ONNXRL_FAKECUDA_EXPORT const char* nvrtcGetErrorString(nvrtcResult r) {
  switch (r) {
    case cu::NVRTC_SUCCESS:
      return "NVRTC_SUCCESS";
    case kOutOfMemory:
      return "NVRTC_ERROR_OUT_OF_MEMORY";
    case kInvalidInput:
      return "NVRTC_ERROR_INVALID_INPUT";
    case kInvalidProgram:
      return "NVRTC_ERROR_INVALID_PROGRAM";
    case kCompilation:
      return "NVRTC_ERROR_COMPILATION";
    default:
      return "NVRTC_ERROR unknown";
  }
}

ONNXRL_FAKECUDA_EXPORT nvrtcResult nvrtcVersion(int* major, int* minor) {
  if (major == nullptr || minor == nullptr) return kInvalidInput;
  *major = 12;
  *minor = 9;
  return cu::NVRTC_SUCCESS;
}

ONNXRL_FAKECUDA_EXPORT nvrtcResult nvrtcGetNumSupportedArchs(int* n) {
  if (n == nullptr) return kInvalidInput;
  *n = static_cast<int>(sizeof kArchs / sizeof kArchs[0]);
  return cu::NVRTC_SUCCESS;
}

ONNXRL_FAKECUDA_EXPORT nvrtcResult nvrtcGetSupportedArchs(int* archs) {
  if (archs == nullptr) return kInvalidInput;
  std::memcpy(archs, kArchs, sizeof kArchs);
  return cu::NVRTC_SUCCESS;
}

ONNXRL_FAKECUDA_EXPORT nvrtcResult nvrtcCreateProgram(nvrtcProgram* prog, const char* src, const char*, int num_headers,
                                                      const char* const*, const char* const*) {
  if (prog == nullptr || src == nullptr || num_headers < 0) return kInvalidInput;
  auto* p = new Program;
  p->src = src;
  *prog = reinterpret_cast<nvrtcProgram>(p);
  return cu::NVRTC_SUCCESS;
}

ONNXRL_FAKECUDA_EXPORT nvrtcResult nvrtcDestroyProgram(nvrtcProgram* prog) {
  if (prog == nullptr || *prog == nullptr) return kInvalidProgram;
  delete P(*prog);
  *prog = nullptr;
  return cu::NVRTC_SUCCESS;
}

ONNXRL_FAKECUDA_EXPORT nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int num_options, const char* const* options) {
  if (prog == nullptr) return kInvalidProgram;
  if (num_options < 0 || (num_options > 0 && options == nullptr)) return kInvalidInput;
  Program* p = P(prog);
  std::string target = "(none)";
  for (int i = 0; i < num_options; i++) {
    const char* o = options[i];
    if (o != nullptr && std::strncmp(o, "--gpu-architecture=", 19) == 0) target = o + 19;
  }
  const char* cache = std::getenv("ONNXRL_CUDA_CACHE");
  if (cache == nullptr || *cache == '\0') {
    p->log =
        "onnxrl fakecuda: set ONNXRL_CUDA_CACHE to a scratch directory: the placeholder image would otherwise be "
        "cached where a real NVRTC's goes";
    return kCompilation;
  }
  if (const char* e = std::getenv("ONNXRL_FAKECUDA_COMPILE_ERROR"); e != nullptr && *e != '\0') {
    p->log = e;  // a compilation that fails, with this log
    return kCompilation;
  }
  if (p->src != onnxrl_ep::DeviceSource()) {
    p->log =
        "onnxrl fakecuda: the source to compile is not the kernels libonnxrl_fakecuda.so was built with "
        "(rebuild it from the same kernels.h and device.cuh as the provider)";
    return kCompilation;
  }
  p->image = "onnxrl fakecuda image for " + target;
  p->log.clear();
  p->compiled = true;
  return cu::NVRTC_SUCCESS;
}

ONNXRL_FAKECUDA_EXPORT nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t* size) {
  if (prog == nullptr) return kInvalidProgram;
  if (size == nullptr) return kInvalidInput;
  *size = P(prog)->log.size() + 1;
  return cu::NVRTC_SUCCESS;
}

ONNXRL_FAKECUDA_EXPORT nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char* log) {
  if (prog == nullptr) return kInvalidProgram;
  if (log == nullptr) return kInvalidInput;
  std::memcpy(log, P(prog)->log.c_str(), P(prog)->log.size() + 1);
  return cu::NVRTC_SUCCESS;
}

// The image, PTX or CUBIN alike: the placeholder, with its terminating NUL.
ONNXRL_FAKECUDA_EXPORT nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t* size) {
  if (prog == nullptr || !P(prog)->compiled) return kInvalidProgram;
  if (size == nullptr) return kInvalidInput;
  *size = P(prog)->image.size() + 1;
  return cu::NVRTC_SUCCESS;
}

ONNXRL_FAKECUDA_EXPORT nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char* out) {
  if (prog == nullptr || !P(prog)->compiled) return kInvalidProgram;
  if (out == nullptr) return kInvalidInput;
  std::memcpy(out, P(prog)->image.c_str(), P(prog)->image.size() + 1);
  return cu::NVRTC_SUCCESS;
}

ONNXRL_FAKECUDA_EXPORT nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t* size) { return nvrtcGetPTXSize(prog, size); }

ONNXRL_FAKECUDA_EXPORT nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char* out) { return nvrtcGetPTX(prog, out); }

#define ONNXRL_FAKECUDA_SAME_TYPE(fn) \
  static_assert(std::is_same_v<decltype(&fn), decltype(cu::NvrtcApi::fn)>, #fn "'s type differs from cuda_api.h's")
ONNXRL_FAKECUDA_SAME_TYPE(nvrtcGetErrorString);
ONNXRL_FAKECUDA_SAME_TYPE(nvrtcVersion);
ONNXRL_FAKECUDA_SAME_TYPE(nvrtcGetNumSupportedArchs);
ONNXRL_FAKECUDA_SAME_TYPE(nvrtcGetSupportedArchs);
ONNXRL_FAKECUDA_SAME_TYPE(nvrtcCreateProgram);
ONNXRL_FAKECUDA_SAME_TYPE(nvrtcDestroyProgram);
ONNXRL_FAKECUDA_SAME_TYPE(nvrtcCompileProgram);
ONNXRL_FAKECUDA_SAME_TYPE(nvrtcGetProgramLogSize);
ONNXRL_FAKECUDA_SAME_TYPE(nvrtcGetProgramLog);
ONNXRL_FAKECUDA_SAME_TYPE(nvrtcGetPTXSize);
ONNXRL_FAKECUDA_SAME_TYPE(nvrtcGetPTX);
ONNXRL_FAKECUDA_SAME_TYPE(nvrtcGetCUBINSize);
ONNXRL_FAKECUDA_SAME_TYPE(nvrtcGetCUBIN);
