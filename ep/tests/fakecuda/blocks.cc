#include "blocks.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

// The running thread's coordinates (host_shim.h declares them for the kernels).
onnxrl_fakecuda::Dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace onnxrl_fakecuda {

namespace {

// A fiber's stack: the kernels keep a few dozen floats in locals and call expf and logf.
constexpr size_t kStackBytes = 64 * 1024;

[[noreturn]] void Fatal(const char* what) {
  std::fprintf(stderr, "onnxrl fakecuda: %s\n", what);
  std::abort();
}

// Fiber is one thread of the running block. Its ucontext_t points into itself (the saved
// floating-point state), so a Fiber never moves.
struct Fiber {
  ucontext_t ctx;
  char* stack = nullptr;  // kStackBytes above a guard page
  bool done = false;
};

struct Emulator {
  std::mutex mu;  // one grid at a time
  ucontext_t scheduler;
  std::vector<std::unique_ptr<Fiber>> fibers;  // grown on demand, kept for the process
  Fiber* current = nullptr;                    // the fiber running, null between fibers
  bool plain = false;                          // threads running as plain calls (no barrier allowed)
  unsigned barriers = 0;                       // barriers reached in the running block
  ThreadBody body = nullptr;
  const void* args = nullptr;
  std::vector<float> smem;  // dynamic shared memory (float: 4-byte aligned, over-allocated to align 16)
  float* smem_base = nullptr;
};

Emulator& E() {
  static Emulator* e = new Emulator;  // never destroyed: fibers may outlive static destructors
  return *e;
}

void Grow(Emulator& e, unsigned n) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  while (e.fibers.size() < n) {
    auto f = std::make_unique<Fiber>();
    void* m = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (m == MAP_FAILED) Fatal("mmap of a fiber stack failed");
    if (mprotect(m, page, PROT_NONE) != 0) Fatal("mprotect of a fiber stack's guard page failed");
    f->stack = static_cast<char*>(m) + page;
    if (getcontext(&f->ctx) != 0) Fatal("getcontext failed");
    e.fibers.push_back(std::move(f));
  }
}

void FiberMain() {
  Emulator& e = E();
  e.body(e.args);
  e.current->done = true;
}  // returns to uc_link: the scheduler

void SetThread(unsigned t) {
  threadIdx.x = t % blockDim.x;
  threadIdx.y = t / blockDim.x % blockDim.y;
  threadIdx.z = t / (blockDim.x * blockDim.y);
}

void RunBlock(Emulator& e, unsigned n) {
  for (unsigned t = 0; t < n; t++) {
    Fiber& f = *e.fibers[t];
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = kStackBytes;
    f.ctx.uc_link = &e.scheduler;
    makecontext(&f.ctx, FiberMain, 0);
    f.done = false;
  }
  e.barriers = 0;
  unsigned live = n;
  // Each pass runs every live fiber up to its next barrier or its end; the next pass starts
  // only when all have, so no fiber passes a barrier before the others reach it.
  for (bool first = true; live > 0; first = false) {
    for (unsigned t = 0; t < n; t++) {
      Fiber& f = *e.fibers[t];
      if (f.done) continue;
      SetThread(t);
      e.current = &f;
      if (swapcontext(&e.scheduler, &f.ctx) != 0) Fatal("swapcontext failed");
      e.current = nullptr;
      if (f.done) live--;
      if (first && t == 0 && f.done && e.barriers == 0) {
        // No barrier in this block (a valid kernel reaches a barrier in all of a block's threads
        // or in none): the others run as plain calls, without two context switches each.
        e.plain = true;
        for (unsigned u = 1; u < n; u++) {
          SetThread(u);
          e.body(e.args);
        }
        e.plain = false;
        return;
      }
    }
  }
}

}  // namespace

void RunGrid(Dim3 grid, Dim3 block, size_t smem_bytes, ThreadBody body, const void* args) {
  Emulator& e = E();
  std::lock_guard<std::mutex> lock(e.mu);
  const unsigned n = block.x * block.y * block.z;
  if (n == 0 || n > kMaxBlockThreads) Fatal("a block of 0 or more than 1024 threads");
  Grow(e, n);
  e.body = body;
  e.args = args;
  const size_t floats = (smem_bytes + sizeof(float) - 1) / sizeof(float) + 4;
  if (e.smem.size() < floats) e.smem.resize(floats);
  e.smem_base = e.smem.data();
  while (reinterpret_cast<uintptr_t>(e.smem_base) % 16 != 0) e.smem_base++;
  gridDim = grid;
  blockDim = block;
  for (unsigned z = 0; z < grid.z; z++)
    for (unsigned y = 0; y < grid.y; y++)
      for (unsigned x = 0; x < grid.x; x++) {
        blockIdx = Dim3{x, y, z};
        std::memset(static_cast<void*>(e.smem_base), 0xff, smem_bytes);  // NaNs
        RunBlock(e, n);
      }
  e.body = nullptr;
  e.args = nullptr;
}

void SyncThreads() {
  Emulator& e = E();
  if (e.plain) Fatal("__syncthreads() in a block whose thread 0 finished without reaching a barrier (divergent barrier)");
  if (e.current == nullptr) Fatal("__syncthreads() outside a kernel");
  e.barriers++;
  Fiber* f = e.current;
  if (swapcontext(&f->ctx, &e.scheduler) != 0) Fatal("swapcontext failed");
}

void* DynamicShared() { return E().smem_base; }

}  // namespace onnxrl_fakecuda
