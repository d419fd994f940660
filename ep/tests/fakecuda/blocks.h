// The block emulator of the fake driver: a kernel's grid run on the host. The blocks run one
// after another; within a block every thread is a fiber (ucontext, its own small stack, the
// stacks kept for the next launch), and __syncthreads() switches to the next fiber: a fiber
// passes a barrier only once every live fiber of its block has reached it. A block whose
// thread 0 finishes without a barrier runs its other threads as plain calls, one after another.
#pragma once

#include <cstddef>

namespace onnxrl_fakecuda {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// ThreadBody runs one thread of a kernel; args are the launch's arguments.
using ThreadBody = void (*)(const void* args);

// The most threads a block may have (as on every CUDA GPU).
constexpr unsigned kMaxBlockThreads = 1024;

// RunGrid runs body for every thread of every block of grid, with gridDim, blockDim, blockIdx
// and threadIdx set, and smem_bytes of dynamic shared memory (DynamicShared), filled with NaNs
// at each block's start so that a read of memory no thread wrote shows. One grid runs at a time
// in the process (a lock): a kernel's static locals are the running block's shared memory.
// block must have 1 to kMaxBlockThreads threads.
void RunGrid(Dim3 grid, Dim3 block, size_t smem_bytes, ThreadBody body, const void* args);

// SyncThreads is __syncthreads(): the barrier of the running block.
void SyncThreads();

// DynamicShared is the running launch's dynamic shared memory (16-byte aligned).
void* DynamicShared();

}  // namespace onnxrl_fakecuda
