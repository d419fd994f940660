// Host mirrors of device.cuh's argument structs (same members, same order, pointers as
// CUdeviceptr), for the kernel parameter lists the backend builds.
#pragma once

#include "cuda_api.h"

namespace onnxrl_ep {
namespace devargs {

struct Dims {
  long long d[8];
};

constexpr int kMaxMlpLayers = 8;
constexpr int kMaxMlpHeads = 4;

struct MlpDesc {
  int layers;
  int heads;
  int rows;
  int width;
  int k[kMaxMlpLayers];
  int n[kMaxMlpLayers];
  int act[kMaxMlpLayers];
  float a[kMaxMlpLayers];
  float b[kMaxMlpLayers];
  cu::CUdeviceptr w[kMaxMlpLayers];
  cu::CUdeviceptr bias[kMaxMlpLayers];
  cu::CUdeviceptr out[kMaxMlpHeads];
};

static_assert(sizeof(Dims) == 64, "Dims is 8 int64");
static_assert(sizeof(MlpDesc) == 176 + 2 * 8 * kMaxMlpLayers + 8 * kMaxMlpHeads, "MlpDesc layout");

}  // namespace devargs
}  // namespace onnxrl_ep
