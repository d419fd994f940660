#include "loader.h"

#include <dlfcn.h>
#include <glob.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <set>

#include "../ort.h"

namespace onnxrl_ep {

namespace {

template <typename T>
bool Bind(void* lib, const char* name, T* fn, std::string* missing) {
  *fn = reinterpret_cast<T>(dlsym(lib, name));
  if (*fn == nullptr) {
    if (!missing->empty()) *missing += ", ";
    *missing += name;
    return false;
  }
  return true;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Glob returns the paths matching pattern, newest version (largest name) first.
std::vector<std::string> Glob(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; i++) out.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  std::sort(out.rbegin(), out.rend());
  return out;
}

// Holders: loaded once per process; a failure is remembered and reported again.
struct DriverHolder {
  std::once_flag once;
  Driver driver;
  std::string err;
};

DriverHolder& Drivers() {
  static DriverHolder* h = new DriverHolder;  // never destroyed: the library stays loaded
  return *h;
}

void LoadDriverOnce(DriverHolder& h) {
  std::string want = Env("ONNXRL_CUDA_DRIVER_LIBRARY");
  std::vector<std::string> names = want.empty() ? std::vector<std::string>{"libcuda.so.1", "libcuda.so"}
                                                : std::vector<std::string>{want};
  void* lib = nullptr;
  std::string tried;
  for (const auto& n : names) {
    lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) {
      h.driver.path = n;
      break;
    }
    const char* e = dlerror();
    tried += (tried.empty() ? "" : "; ") + std::string(e ? e : n.c_str());
  }
  if (lib == nullptr) {
    h.err = "the NVIDIA driver library was not found (" + tried +
            "); the CUDA backend needs an NVIDIA GPU with its driver installed (use --device native for the host "
            "backend, or set ONNXRL_CUDA_DRIVER_LIBRARY to libcuda.so.1's path)";
    return;
  }
  cu::DriverApi& a = h.driver.api;
  std::string missing;
  Bind(lib, "cuInit", &a.cuInit, &missing);
  Bind(lib, "cuDriverGetVersion", &a.cuDriverGetVersion, &missing);
  Bind(lib, "cuGetErrorName", &a.cuGetErrorName, &missing);
  Bind(lib, "cuGetErrorString", &a.cuGetErrorString, &missing);
  Bind(lib, "cuDeviceGetCount", &a.cuDeviceGetCount, &missing);
  Bind(lib, "cuDeviceGet", &a.cuDeviceGet, &missing);
  Bind(lib, "cuDeviceGetName", &a.cuDeviceGetName, &missing);
  Bind(lib, "cuDeviceGetAttribute", &a.cuDeviceGetAttribute, &missing);
  Bind(lib, "cuDevicePrimaryCtxRetain", &a.cuDevicePrimaryCtxRetain, &missing);
  Bind(lib, "cuDevicePrimaryCtxRelease_v2", &a.cuDevicePrimaryCtxRelease_v2, &missing);
  Bind(lib, "cuCtxSetCurrent", &a.cuCtxSetCurrent, &missing);
  Bind(lib, "cuModuleLoadData", &a.cuModuleLoadData, &missing);
  Bind(lib, "cuModuleUnload", &a.cuModuleUnload, &missing);
  Bind(lib, "cuModuleGetFunction", &a.cuModuleGetFunction, &missing);
  Bind(lib, "cuFuncSetAttribute", &a.cuFuncSetAttribute, &missing);
  Bind(lib, "cuLaunchKernel", &a.cuLaunchKernel, &missing);
  Bind(lib, "cuMemAlloc_v2", &a.cuMemAlloc_v2, &missing);
  Bind(lib, "cuMemFree_v2", &a.cuMemFree_v2, &missing);
  Bind(lib, "cuMemAllocHost_v2", &a.cuMemAllocHost_v2, &missing);
  Bind(lib, "cuMemFreeHost", &a.cuMemFreeHost, &missing);
  Bind(lib, "cuMemHostRegister_v2", &a.cuMemHostRegister_v2, &missing);
  Bind(lib, "cuMemHostUnregister", &a.cuMemHostUnregister, &missing);
  Bind(lib, "cuMemcpyHtoD_v2", &a.cuMemcpyHtoD_v2, &missing);
  Bind(lib, "cuMemcpyHtoDAsync_v2", &a.cuMemcpyHtoDAsync_v2, &missing);
  Bind(lib, "cuMemcpyDtoHAsync_v2", &a.cuMemcpyDtoHAsync_v2, &missing);
  Bind(lib, "cuMemcpyDtoDAsync_v2", &a.cuMemcpyDtoDAsync_v2, &missing);
  Bind(lib, "cuStreamCreate", &a.cuStreamCreate, &missing);
  Bind(lib, "cuStreamDestroy_v2", &a.cuStreamDestroy_v2, &missing);
  Bind(lib, "cuStreamSynchronize", &a.cuStreamSynchronize, &missing);
  Bind(lib, "cuStreamBeginCapture_v2", &a.cuStreamBeginCapture_v2, &missing);
  Bind(lib, "cuStreamEndCapture", &a.cuStreamEndCapture, &missing);
  Bind(lib, "cuGraphInstantiateWithFlags", &a.cuGraphInstantiateWithFlags, &missing);
  Bind(lib, "cuGraphLaunch", &a.cuGraphLaunch, &missing);
  Bind(lib, "cuGraphExecDestroy", &a.cuGraphExecDestroy, &missing);
  Bind(lib, "cuGraphDestroy", &a.cuGraphDestroy, &missing);
  Bind(lib, "cuEventCreate", &a.cuEventCreate, &missing);
  Bind(lib, "cuEventRecord", &a.cuEventRecord, &missing);
  Bind(lib, "cuStreamWaitEvent", &a.cuStreamWaitEvent, &missing);
  Bind(lib, "cuEventSynchronize", &a.cuEventSynchronize, &missing);
  Bind(lib, "cuEventDestroy_v2", &a.cuEventDestroy_v2, &missing);
  if (!missing.empty()) {
    h.err = "the NVIDIA driver library " + h.driver.path + " lacks " + missing +
            " (the CUDA backend needs a driver for CUDA 11.4 or newer)";
    return;
  }
  a.cuDriverGetVersion(&h.driver.version);
  cu::CUresult r = a.cuInit(0);
  if (r == cu::CUDA_ERROR_NO_DEVICE) {
    h.err = "no CUDA GPU found (cuInit: " + CuError(a, r) + "; driver " + h.driver.path + ")";
    return;
  }
  if (r != cu::CUDA_SUCCESS) {
    h.err = "cuInit failed: " + CuError(a, r) + " (driver " + h.driver.path + ")";
    return;
  }
  a.cuDeviceGetCount(&h.driver.devices);
  if (h.driver.devices <= 0) h.err = "no CUDA GPU found (cuDeviceGetCount: 0; driver " + h.driver.path + ")";
}

struct NvrtcHolder {
  std::mutex mu;
  std::vector<std::unique_ptr<Nvrtc>> loaded;  // every library opened so far, in candidate order
  bool scanned = false;
  std::string looked;  // what failed to open, for the error
};

NvrtcHolder& Nvrtcs() {
  static NvrtcHolder* h = new NvrtcHolder;
  return *h;
}

std::unique_ptr<Nvrtc> OpenNvrtc(const std::string& path, std::string* why) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = dlerror();
    *why = e ? e : "dlopen failed";
    return nullptr;
  }
  auto n = std::make_unique<Nvrtc>();
  n->path = path;
  cu::NvrtcApi& a = n->api;
  std::string missing;
  Bind(lib, "nvrtcGetErrorString", &a.nvrtcGetErrorString, &missing);
  Bind(lib, "nvrtcVersion", &a.nvrtcVersion, &missing);
  Bind(lib, "nvrtcGetNumSupportedArchs", &a.nvrtcGetNumSupportedArchs, &missing);
  Bind(lib, "nvrtcGetSupportedArchs", &a.nvrtcGetSupportedArchs, &missing);
  Bind(lib, "nvrtcCreateProgram", &a.nvrtcCreateProgram, &missing);
  Bind(lib, "nvrtcDestroyProgram", &a.nvrtcDestroyProgram, &missing);
  Bind(lib, "nvrtcCompileProgram", &a.nvrtcCompileProgram, &missing);
  Bind(lib, "nvrtcGetProgramLogSize", &a.nvrtcGetProgramLogSize, &missing);
  Bind(lib, "nvrtcGetProgramLog", &a.nvrtcGetProgramLog, &missing);
  Bind(lib, "nvrtcGetPTXSize", &a.nvrtcGetPTXSize, &missing);
  Bind(lib, "nvrtcGetPTX", &a.nvrtcGetPTX, &missing);
  Bind(lib, "nvrtcGetCUBINSize", &a.nvrtcGetCUBINSize, &missing);
  Bind(lib, "nvrtcGetCUBIN", &a.nvrtcGetCUBIN, &missing);
  if (!missing.empty()) {
    *why = "lacks " + missing + " (NVRTC 11.2 or newer needed)";
    dlclose(lib);
    return nullptr;
  }
  a.nvrtcVersion(&n->major, &n->minor);
  int na = 0;
  a.nvrtcGetNumSupportedArchs(&na);
  n->archs.resize(na > 0 ? na : 0);
  if (na > 0) a.nvrtcGetSupportedArchs(n->archs.data());
  return n;
}

}  // namespace

std::string CuError(const cu::DriverApi& api, cu::CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName) api.cuGetErrorName(r, &name);
  if (api.cuGetErrorString) api.cuGetErrorString(r, &text);
  std::string s = name ? name : "CUDA error " + std::to_string(r);
  if (text) s += std::string(" (") + text + ")";
  return s;
}

void CuCheck(const cu::DriverApi& api, cu::CUresult r, const char* what) {
  if (r == cu::CUDA_SUCCESS) return;
  throw Error{std::string(what) + ": " + CuError(api, r)};
}

const Driver& LoadDriver() {
  DriverHolder& h = Drivers();
  std::call_once(h.once, [&] { LoadDriverOnce(h); });
  if (!h.err.empty()) throw Error{h.err};
  return h.driver;
}

std::vector<std::string> NvrtcCandidates() {
  std::string want = Env("ONNXRL_NVRTC_LIBRARY");
  if (!want.empty()) return {want};
  std::vector<std::string> dirs;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    std::string v = Env(var);
    if (!v.empty()) dirs.push_back(v + "/lib64");
  }
  dirs.push_back("/usr/local/cuda/lib64");
  for (const auto& d : Glob("/usr/local/cuda-*/lib64")) dirs.push_back(d);
  std::vector<std::string> sites;
  std::string venv = Env("VIRTUAL_ENV");
  if (!venv.empty()) sites.push_back(venv + "/lib/python3*/site-packages");
  std::string home = Env("HOME");
  if (!home.empty()) sites.push_back(home + "/.local/lib/python3*/site-packages");
  for (const char* s : {"/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
                        "/usr/lib/python3/dist-packages", "/opt/*/.venv/lib/python3*/site-packages",
                        "/opt/conda/lib/python3*/site-packages"}) {
    sites.push_back(s);
  }
  for (const auto& s : sites)
    for (const char* sub : {"/nvidia/cu13/lib", "/nvidia/cuda_nvrtc/lib"})
      for (const auto& d : Glob(s + sub)) dirs.push_back(d);
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& d : dirs) {
    for (const auto& f : Glob(d + "/libnvrtc.so*")) {
      if (f.find("builtins") != std::string::npos || f.find("alt") != std::string::npos) continue;
      if (seen.insert(f).second) out.push_back(f);
    }
  }
  for (const char* so : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}) out.push_back(so);
  return out;
}

const Nvrtc& LoadNvrtc(int max_version) {
  NvrtcHolder& h = Nvrtcs();
  std::lock_guard<std::mutex> lock(h.mu);
  if (!h.scanned) {
    h.scanned = true;
    std::set<std::string> versions;  // one library per path; the same file may be reached twice
    for (const auto& path : NvrtcCandidates()) {
      std::string why;
      auto n = OpenNvrtc(path, &why);
      if (!n) {
        h.looked += (h.looked.empty() ? "" : "; ") + path + ": " + why;
        continue;
      }
      h.loaded.push_back(std::move(n));
    }
  }
  std::string too_new;
  for (const auto& n : h.loaded) {
    if (max_version == 0 || n->Version() <= max_version) return *n;
    too_new += (too_new.empty() ? "" : ", ") + n->path + " (" + std::to_string(n->major) + "." +
               std::to_string(n->minor) + ")";
  }
  if (!too_new.empty()) {
    throw Error{"the driver is too old for the NVRTC found: it supports CUDA " + std::to_string(max_version / 1000) +
                "." + std::to_string(max_version % 1000 / 10) + ", NVRTC is " + too_new +
                "; update the NVIDIA driver, or point ONNXRL_NVRTC_LIBRARY at an NVRTC no newer than the driver"};
  }
  throw Error{"NVRTC (libnvrtc.so) was not found; looked in: " + h.looked +
              ". Install the CUDA toolkit or the nvidia-cuda-nvrtc wheel, or set ONNXRL_NVRTC_LIBRARY"};
}

}  // namespace onnxrl_ep
