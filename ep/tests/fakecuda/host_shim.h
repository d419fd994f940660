// CUDA C's keywords and built-ins for compiling the backend's kernels (src/kernels.h, then
// src/cuda/device.cuh) as host C++. The fake driver (libonnxrl_fakecuda.so) runs them on the CPU:
// a grid's blocks one after another, a block's threads as fibers (blocks.h). Included before
// kernels.h and device.cuh, in kernel_table.cc only.
#pragma once

#include <cmath>
#include <cstddef>

#include "blocks.h"

#define __global__
#define __device__
#define __host__
#define __launch_bounds__(...)
// One block runs at a time in the whole process (RunGrid holds a lock), so a kernel's static
// storage is the running block's shared memory.
#define __shared__ static
// __ldg is a load through the read-only cache: a plain load here (float and float4 pointers).
#define __ldg(p) (*(p))
// device.cuh's hook for `extern __shared__`: the launch's dynamic shared memory.
#define ONNXRL_DYNAMIC_SMEM(name) float* name = static_cast<float*>(::onnxrl_fakecuda::DynamicShared())

// CUDA's float4: four floats, 16-byte aligned (a misaligned float4 load faults on the GPU and
// may fault here too: GCC loads it with aligned instructions).
struct alignas(16) float4 {
  float x, y, z, w;
};

// The running fiber's coordinates, set by the block emulator before it switches to a fiber.
extern onnxrl_fakecuda::Dim3 threadIdx, blockIdx, blockDim, gridDim;

inline void __syncthreads() { onnxrl_fakecuda::SyncThreads(); }
