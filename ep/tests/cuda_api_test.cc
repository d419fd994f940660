// Checks the backend's own CUDA declarations (src/cuda/cuda_api.h) against the real cuda.h and
// nvrtc.h: every constant's value and the sizes of the types passed by value. Built only where
// the CUDA headers are found (the GPU machine; see ep/CMakeLists.txt and scripts/device-check.sh):
// compiling is the test.
#include <cuda.h>
#include <nvrtc.h>

#include <cstdio>

#include "cuda/cuda_api.h"

namespace c = onnxrl_ep::cu;

static_assert(sizeof(c::CUdeviceptr) == sizeof(::CUdeviceptr), "CUdeviceptr");
static_assert(sizeof(c::CUdevice) == sizeof(::CUdevice), "CUdevice");
static_assert(sizeof(c::CUresult) == sizeof(::CUresult), "CUresult");
static_assert(sizeof(c::CUcontext) == sizeof(::CUcontext), "CUcontext");
static_assert(c::CUDA_SUCCESS == ::CUDA_SUCCESS, "CUDA_SUCCESS");
static_assert(c::CUDA_ERROR_OUT_OF_MEMORY == ::CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY");
static_assert(c::CUDA_ERROR_NO_DEVICE == ::CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE");
static_assert(c::CUDA_ERROR_INVALID_DEVICE == ::CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE");
static_assert(c::CUDA_ERROR_NO_BINARY_FOR_GPU == ::CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU");
static_assert(c::CUDA_ERROR_UNSUPPORTED_PTX_VERSION == ::CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "PTX version");
static_assert(c::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT == ::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count");
static_assert(c::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR == ::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "cc");
static_assert(c::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR == ::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "cc");
static_assert(c::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN ==
                  ::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "smem opt-in");
static_assert(c::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES == ::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
              "dynamic smem");
static_assert(c::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED == ::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
              "already registered");
static_assert(c::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED == ::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "not registered");
static_assert(c::kMemHostRegisterPortable == CU_MEMHOSTREGISTER_PORTABLE, "CU_MEMHOSTREGISTER_PORTABLE");
static_assert(c::CU_STREAM_NON_BLOCKING == ::CU_STREAM_NON_BLOCKING, "CU_STREAM_NON_BLOCKING");
static_assert(c::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL == ::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, "capture mode");
static_assert(c::CU_EVENT_DISABLE_TIMING == ::CU_EVENT_DISABLE_TIMING, "CU_EVENT_DISABLE_TIMING");
static_assert(c::NVRTC_SUCCESS == ::NVRTC_SUCCESS, "NVRTC_SUCCESS");

int main() {
  std::printf("cuda_api.h matches cuda.h %d and nvrtc.h\n", CUDA_VERSION);
  return 0;
}
