// Finding and opening the CUDA driver library and NVRTC at run time (dlopen), once per
// process. Every failure is an Error that names what is missing and where it was looked for.
#pragma once

#include <string>
#include <vector>

#include "cuda_api.h"

namespace onnxrl_ep {

// Driver is the driver API: libcuda.so.1 opened and cuInit done on first use (or
// $ONNXRL_CUDA_DRIVER_LIBRARY). Throws Error when there is no driver or no GPU.
struct Driver {
  cu::DriverApi api{};
  std::string path;
  int version = 0;  // cuDriverGetVersion: 1000 * major + 10 * minor
  int devices = 0;
};
const Driver& LoadDriver();

// Nvrtc is one NVRTC library: its entry points, where it was found, its version and the
// architectures it compiles for (e.g. 80 for sm_80).
struct Nvrtc {
  cu::NvrtcApi api{};
  std::string path;
  int major = 0, minor = 0;
  std::vector<int> archs;
  int Version() const { return major * 1000 + minor * 10; }
};
// LoadNvrtc returns the first NVRTC found (see NvrtcCandidates) whose version the driver
// supports (max_version: the driver's, 1000 * major + 10 * minor; 0 accepts any). Throws
// Error naming every place looked in, or the NVRTC versions found that were too new.
const Nvrtc& LoadNvrtc(int max_version);

// NvrtcCandidates lists, in order, the libraries LoadNvrtc tries: $ONNXRL_NVRTC_LIBRARY alone
// when set; else the toolkit's lib64 ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda*), pip's wheels
// (nvidia/cu13/lib, nvidia/cuda_nvrtc/lib in the usual site-packages folders and
// $VIRTUAL_ENV), and last the bare sonames for the system's library path.
std::vector<std::string> NvrtcCandidates();

// CuError formats a driver result: "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
std::string CuError(const cu::DriverApi& api, cu::CUresult r);
// CuCheck throws Error("what: CuError") when r is not CUDA_SUCCESS.
void CuCheck(const cu::DriverApi& api, cu::CUresult r, const char* what);

}  // namespace onnxrl_ep
