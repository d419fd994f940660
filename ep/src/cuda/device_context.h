// What a kernel's Device method is handed: the signature's shapes and device buffers, and the
// launches it may make on the executor's stream. A signature's first run records every launch
// eagerly (it may allocate: resident weights, scratch); the executor then captures the same
// sequence into a CUDA graph, during which nothing may be allocated or uploaded.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cuda_api.h"

namespace onnxrl_ep {

struct Run;
class CudaExecutor;

class DeviceContext {
 public:
  using ScratchMap = std::map<std::pair<size_t, size_t>, std::pair<cu::CUdeviceptr, size_t>>;
  DeviceContext(CudaExecutor& ex, Run& run, const std::vector<cu::CUdeviceptr>& dptr, ScratchMap& scratch,
                size_t step, bool capturing)
      : ex_(ex), run_(run), dptr_(dptr), scratch_(scratch), step_(step), capturing_(capturing) {}

  const std::vector<int64_t>& shape(int v) const;
  const std::vector<int64_t>& aux() const;
  // ptr is value v's device buffer; 0 for an absent optional value (-1).
  cu::CUdeviceptr ptr(int v) const;
  // bytes is the size of value v's data in this signature.
  size_t bytes(int v) const;
  // Resident is host data (a kernel's weights) on the device, uploaded at its first use and
  // kept as long as the executor.
  cu::CUdeviceptr Resident(const std::vector<float>& host);
  // Scratch is this step's i-th scratch buffer of this signature (floats), allocated once.
  cu::CUdeviceptr Scratch(size_t i, size_t floats);
  // Static writes bytes that depend only on the signature (a Shape's output): done on the
  // first run, skipped when replaying.
  void Static(cu::CUdeviceptr dst, const void* src, size_t bytes);
  // Copy is a device-to-device copy on the stream.
  void Copy(cu::CUdeviceptr dst, cu::CUdeviceptr src, size_t bytes);
  // Elementwise launches a grid-stride kernel over n items (nothing when n is 0).
  void Elementwise(const char* kernel, long long n, std::initializer_list<void*> args);
  // Launch launches kernel on a gx x gy grid of block threads with smem bytes of dynamic
  // shared memory.
  void Launch(const char* kernel, unsigned gx, unsigned gy, unsigned block, unsigned smem,
              std::initializer_list<void*> args);
  // Gemm: out = act(a @ w + bias + (accum ? out : 0)), row pitches in floats (onnxrl_gemm).
  void Gemm(cu::CUdeviceptr a, long long lda, cu::CUdeviceptr w, long long ldw, cu::CUdeviceptr bias,
            cu::CUdeviceptr out, long long ldo, long long M, long long N, long long K, bool accum, int act, float pa,
            float pb);

 private:
  CudaExecutor& ex_;
  Run& run_;
  const std::vector<cu::CUdeviceptr>& dptr_;
  ScratchMap& scratch_;
  size_t step_;
  bool capturing_;
};

}  // namespace onnxrl_ep
