// The backend's kernels (src/cuda/device.cuh) compiled as host C++, by name, each with a
// trampoline that reads its arguments from cuLaunchKernel's parameter list into their real
// types and runs the grid on the block emulator (blocks.h).
#pragma once

#include <cstddef>
#include <vector>

#include "blocks.h"

namespace onnxrl_fakecuda {

struct Kernel {
  const char* name;
  // The most threads a block may have: __launch_bounds__' first argument where the kernel has
  // one (the emulator ignores the attribute itself; this table repeats it), else 1024.
  unsigned max_threads;
  std::vector<size_t> param_sizes;  // per parameter, as cuLaunchKernel reads them
  // Pointers appends the device addresses the arguments hold (pointer parameters, and the
  // pointers of an MlpDesc), for the driver to check against its allocations.
  void (*pointers)(void* const* params, std::vector<const void*>* out);
  // Run reads the arguments from params (one pointer per parameter, to a value of its type)
  // and runs the kernel on grid x block with smem_bytes of dynamic shared memory.
  void (*run)(Dim3 grid, Dim3 block, size_t smem_bytes, void* const* params);
};

// Kernels is every extern "C" kernel of device.cuh.
const std::vector<Kernel>& Kernels();
// FindKernel is the kernel named name, or null.
const Kernel* FindKernel(const char* name);

}  // namespace onnxrl_fakecuda
