#include "compiler.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "../ort.h"

namespace onnxrl_ep {

namespace {

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string CacheDir() {
  if (const char* d = std::getenv("ONNXRL_CUDA_CACHE")) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/onnxrl/cuda";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/onnxrl/cuda";
  return "";
}

bool MakeDirs(const std::string& dir) {
  std::string cur;
  std::stringstream ss(dir);
  std::string part;
  if (!dir.empty() && dir[0] == '/') cur = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    cur += part + "/";
    if (mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  return true;
}

std::string NvrtcError(const Nvrtc& n, cu::nvrtcResult r) {
  const char* s = n.api.nvrtcGetErrorString ? n.api.nvrtcGetErrorString(r) : nullptr;
  return s ? s : "NVRTC error " + std::to_string(r);
}

}  // namespace

std::string Target(const Nvrtc& nvrtc, int cc) {
  int best = 0;
  for (int a : nvrtc.archs) {
    if (a == cc) return "sm_" + std::to_string(cc);
    if (a < cc && a > best) best = a;
  }
  if (best == 0) {
    throw Error{"NVRTC " + std::to_string(nvrtc.major) + "." + std::to_string(nvrtc.minor) + " (" + nvrtc.path +
                ") cannot compile for compute capability " + std::to_string(cc / 10) + "." + std::to_string(cc % 10)};
  }
  return "compute_" + std::to_string(best);
}

Image CompileSource(const Nvrtc& nvrtc, const std::string& src, const std::string& target, bool verbose) {
  const cu::NvrtcApi& a = nvrtc.api;
  cu::nvrtcProgram prog = nullptr;
  cu::nvrtcResult r = a.nvrtcCreateProgram(&prog, src.c_str(), "onnxrl_kernels.cu", 0, nullptr, nullptr);
  if (r != cu::NVRTC_SUCCESS) throw Error{"nvrtcCreateProgram: " + NvrtcError(nvrtc, r)};
  std::string arch = "--gpu-architecture=" + target;
  std::vector<const char*> opts = {arch.c_str(), "--std=c++17", "-default-device"};
  if (verbose) opts.push_back("--ptxas-options=-v");
  r = a.nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  Image img;
  img.target = target;
  img.ptx = target.rfind("compute_", 0) == 0;
  size_t log_size = 0;
  if (a.nvrtcGetProgramLogSize(prog, &log_size) == cu::NVRTC_SUCCESS && log_size > 1) {
    img.log.resize(log_size);
    a.nvrtcGetProgramLog(prog, &img.log[0]);
    img.log.resize(log_size - 1);
  }
  if (r != cu::NVRTC_SUCCESS) {
    a.nvrtcDestroyProgram(&prog);
    throw Error{"NVRTC " + std::to_string(nvrtc.major) + "." + std::to_string(nvrtc.minor) + " (" + nvrtc.path +
                ") failed to compile the kernels for " + target + ": " + NvrtcError(nvrtc, r) + "\n" + img.log};
  }
  size_t size = 0;
  if (img.ptx) {
    r = a.nvrtcGetPTXSize(prog, &size);
    if (r == cu::NVRTC_SUCCESS) {
      img.data.resize(size);
      r = a.nvrtcGetPTX(prog, &img.data[0]);
    }
  } else {
    r = a.nvrtcGetCUBINSize(prog, &size);
    if (r == cu::NVRTC_SUCCESS) {
      img.data.resize(size);
      r = a.nvrtcGetCUBIN(prog, &img.data[0]);
    }
  }
  a.nvrtcDestroyProgram(&prog);
  if (r != cu::NVRTC_SUCCESS) throw Error{"reading NVRTC's output: " + NvrtcError(nvrtc, r)};
  return img;
}

std::string CacheKey(const Nvrtc& nvrtc, const std::string& src, const std::string& target) {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(Fnv1a(src)));
  return std::string(hash) + "-" + target + "-nvrtc" + std::to_string(nvrtc.major) + "." +
         std::to_string(nvrtc.minor) + (target.rfind("compute_", 0) == 0 ? ".ptx" : ".cubin");
}

Image CachedImage(const Nvrtc& nvrtc, const std::string& src, const std::string& target) {
  std::string dir = CacheDir();
  std::string path = dir.empty() ? "" : dir + "/" + CacheKey(nvrtc, src, target);
  if (!path.empty()) {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::ostringstream ss;
      ss << in.rdbuf();
      Image img;
      img.data = ss.str();
      img.target = target;
      img.ptx = target.rfind("compute_", 0) == 0;
      img.cached = true;
      if (!img.data.empty()) return img;
    }
  }
  Image img = CompileSource(nvrtc, src, target, false);
  if (!path.empty() && MakeDirs(dir)) {
    // Written under a temporary name and renamed: a reader never sees half a file.
    std::string tmp = path + ".tmp" + std::to_string(getpid());
    std::ofstream out(tmp, std::ios::binary);
    out.write(img.data.data(), static_cast<std::streamsize>(img.data.size()));
    out.close();
    if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
  }
  return img;
}

}  // namespace onnxrl_ep
