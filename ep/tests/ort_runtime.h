// The ONNX Runtime library as the provider's CTests load it (load_test.cc, concurrency_test.cc):
// dlopen'ed from the path CTest passes, its C API table taken at the headers' version.
#pragma once

#include <dlfcn.h>
#include <onnxruntime_c_api.h>

#include <cstdio>

namespace onnxrl_ep_test {

// LoadRuntime returns the C API table of the runtime at path, printing its version, or null
// with *exit_code set: 77 (CTest's skip) when the library is missing, 1 when it is unusable.
inline const OrtApi* LoadRuntime(const char* path, int* exit_code) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::printf("SKIP: cannot load %s: %s (run `make onnxruntime`)\n", path, dlerror());
    *exit_code = 77;
    return nullptr;
  }
  auto get_base = reinterpret_cast<const OrtApiBase* (*)()>(dlsym(lib, "OrtGetApiBase"));
  if (get_base == nullptr) {
    std::printf("FAIL: %s has no OrtGetApiBase\n", path);
    *exit_code = 1;
    return nullptr;
  }
  const OrtApiBase* base = get_base();
  std::printf("runtime %s from %s\n", base->GetVersionString(), path);
  const OrtApi* api = base->GetApi(ORT_API_VERSION);
  if (api == nullptr) {
    std::printf("FAIL: the runtime does not offer C API version %d\n", ORT_API_VERSION);
    *exit_code = 1;
  }
  return api;
}

}  // namespace onnxrl_ep_test
