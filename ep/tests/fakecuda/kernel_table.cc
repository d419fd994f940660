// The kernels of device.cuh (after kernels.h, as NVRTC sees them) compiled as host C++.
#include "kernel_table.h"

#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "host_shim.h"
// clang-format off: the order is NVRTC's (device_source.cc)
#include "kernels.h"
#define ONNXRL_KERNEL_SIDE 1
#include "cuda/device_args.h"
#include "cuda/device.cuh"
#undef ONNXRL_KERNEL_SIDE
// clang-format on
#include "cuda/device_args.h"  // the backend's side

namespace onnxrl_fakecuda {

namespace {

// The backend's side of device_args.h (CUdeviceptr fields) lays out as the kernels' side.
namespace dev = onnxrl_ep::dev;
namespace devargs = onnxrl_ep::devargs;
static_assert(sizeof(dev::Dims) == sizeof(devargs::Dims), "device_args.h's Dims differs from device.cuh's");
static_assert(sizeof(dev::MlpDesc) == sizeof(devargs::MlpDesc), "device_args.h's MlpDesc differs from device.cuh's");
static_assert(offsetof(dev::MlpDesc, w) == offsetof(devargs::MlpDesc, w), "MlpDesc::w moved");
static_assert(offsetof(dev::MlpDesc, bias) == offsetof(devargs::MlpDesc, bias), "MlpDesc::bias moved");
static_assert(offsetof(dev::MlpDesc, out) == offsetof(devargs::MlpDesc, out), "MlpDesc::out moved");
static_assert(dev::kMaxMlpLayers == devargs::kMaxMlpLayers && dev::kMaxMlpHeads == devargs::kMaxMlpHeads,
              "MlpDesc's limits differ");

// AddPointers appends the device addresses in a kernel argument.
template <typename T>
void AddPointers(const T& v, std::vector<const void*>* out) {
  if constexpr (std::is_pointer_v<T>) out->push_back(v);
}

void AddPointers(const dev::MlpDesc& d, std::vector<const void*>* out) {
  for (int l = 0; l < d.layers && l < dev::kMaxMlpLayers; l++) {
    out->push_back(d.w[l]);
    out->push_back(d.bias[l]);
  }
  for (int h = 0; h < d.heads && h < dev::kMaxMlpHeads; h++) out->push_back(d.out[h]);
}

// Trampoline<K> launches kernel K: each params[i] is copied into the i-th parameter's type
// (a CUdeviceptr into a pointer: both 8 bytes), then every thread calls K with the copies.
template <auto K>
struct Trampoline;

template <typename... A, void (*K)(A...)>
struct Trampoline<K> {
  using Args = std::tuple<A...>;
  static_assert((std::is_trivially_copyable_v<A> && ...), "a kernel parameter that is not trivially copyable");

  static void Thread(const void* args) { std::apply(K, *static_cast<const Args*>(args)); }

  template <size_t... I>
  static void Unpack(Args& args, void* const* params, std::index_sequence<I...>) {
    (std::memcpy(static_cast<void*>(&std::get<I>(args)), params[I], sizeof(A)), ...);
  }

  static void Run(Dim3 grid, Dim3 block, size_t smem_bytes, void* const* params) {
    Args args{};
    Unpack(args, params, std::index_sequence_for<A...>{});
    RunGrid(grid, block, smem_bytes, Thread, &args);
  }

  static void Pointers(void* const* params, std::vector<const void*>* out) {
    Args args{};
    Unpack(args, params, std::index_sequence_for<A...>{});
    std::apply([out](const A&... a) { (AddPointers(a, out), ...); }, args);
  }

  static Kernel Make(const char* name, unsigned max_threads) {
    return Kernel{name, max_threads, {sizeof(A)...}, Pointers, Run};
  }
};

#define ONNXRL_FAKECUDA_KERNEL(k, max_threads) Trampoline<&k>::Make(#k, max_threads)

}  // namespace

const std::vector<Kernel>& Kernels() {
  static const std::vector<Kernel>* k = new std::vector<Kernel>{
      ONNXRL_FAKECUDA_KERNEL(onnxrl_unary, kMaxBlockThreads),
      ONNXRL_FAKECUDA_KERNEL(onnxrl_binary, kMaxBlockThreads),
      ONNXRL_FAKECUDA_KERNEL(onnxrl_strided, kMaxBlockThreads),
      ONNXRL_FAKECUDA_KERNEL(onnxrl_copy2d, kMaxBlockThreads),
      ONNXRL_FAKECUDA_KERNEL(onnxrl_fill, kMaxBlockThreads),
      ONNXRL_FAKECUDA_KERNEL(onnxrl_softmax, kMaxBlockThreads),
      ONNXRL_FAKECUDA_KERNEL(onnxrl_gemm, 256),
      ONNXRL_FAKECUDA_KERNEL(onnxrl_mlp, 256),
      ONNXRL_FAKECUDA_KERNEL(onnxrl_lstm_cell, kMaxBlockThreads),
      ONNXRL_FAKECUDA_KERNEL(onnxrl_lstm_step, kMaxBlockThreads),
      ONNXRL_FAKECUDA_KERNEL(onnxrl_gru_lbr, kMaxBlockThreads),
      ONNXRL_FAKECUDA_KERNEL(onnxrl_gru_reset, kMaxBlockThreads),
      ONNXRL_FAKECUDA_KERNEL(onnxrl_gru_out, kMaxBlockThreads),
      ONNXRL_FAKECUDA_KERNEL(onnxrl_conv, kMaxBlockThreads),
      ONNXRL_FAKECUDA_KERNEL(onnxrl_pool, kMaxBlockThreads),
      ONNXRL_FAKECUDA_KERNEL(onnxrl_layernorm, kMaxBlockThreads),
      ONNXRL_FAKECUDA_KERNEL(onnxrl_reduce_mean, kMaxBlockThreads),
      ONNXRL_FAKECUDA_KERNEL(onnxrl_pad, kMaxBlockThreads),
  };
  return *k;
}

const Kernel* FindKernel(const char* name) {
  if (name == nullptr) return nullptr;
  for (const Kernel& k : Kernels())
    if (std::strcmp(k.name, name) == 0) return &k;
  return nullptr;
}

}  // namespace onnxrl_fakecuda
