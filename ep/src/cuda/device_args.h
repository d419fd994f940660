// The kernels' argument structs, defined once for both sides. The backend includes this file as
// host C++: device pointers are CUdeviceptr, in namespace devargs. The kernels see it with
// ONNXRL_KERNEL_SIDE defined: real pointers, in namespace dev. The build puts this text, after
// that definition, between kernels.h and device.cuh (EmbedSource.cmake); the fake driver's host
// build of the kernels includes it the same way. Each side has its own include guard, so one
// file can see both (the fake driver checks that their layouts agree).
#if defined(ONNXRL_KERNEL_SIDE) ? !defined(ONNXRL_DEVICE_ARGS_KERNEL) : !defined(ONNXRL_DEVICE_ARGS_HOST)

#if defined(ONNXRL_KERNEL_SIDE)
#define ONNXRL_DEVICE_ARGS_KERNEL
#define ONNXRL_ARG_PTR(T) T*
#define ONNXRL_ARGS_NS dev
#else
#define ONNXRL_DEVICE_ARGS_HOST
#include "cuda_api.h"
#define ONNXRL_ARG_PTR(T) ::onnxrl_ep::cu::CUdeviceptr
#define ONNXRL_ARGS_NS devargs
#endif

namespace onnxrl_ep {
namespace ONNXRL_ARGS_NS {

// Dims: up to 8 dimensions or element strides, passed by value.
struct Dims {
  long long d[8];
};

constexpr int kMaxMlpLayers = 8;
constexpr int kMaxMlpHeads = 4;

// MlpDesc: dense layers run by onnxrl_mlp: a trunk (the first layers - heads, each reading
// the last's output) and heads (the last `heads` layers, each reading the trunk's output, or the
// input when there is no trunk, and writing out[h]). rows is the tile of rows a block owns,
// width the widest row kept in shared memory.
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
  ONNXRL_ARG_PTR(const float) w[kMaxMlpLayers];
  ONNXRL_ARG_PTR(const float) bias[kMaxMlpLayers];
  ONNXRL_ARG_PTR(float) out[kMaxMlpHeads];
};

static_assert(sizeof(Dims) == 64, "Dims is 8 int64");
static_assert(sizeof(MlpDesc) == 176 + 2 * 8 * kMaxMlpLayers + 8 * kMaxMlpHeads, "MlpDesc layout");

}  // namespace ONNXRL_ARGS_NS
}  // namespace onnxrl_ep

#undef ONNXRL_ARG_PTR
#undef ONNXRL_ARGS_NS

#endif
