# Writes OUT, a C++ file defining onnxrl_ep::DeviceSource(): the text of kernels.h, then of
# device_args.h (its kernel side), then of device.cuh: the CUDA source NVRTC compiles at run time.
# Run by the build (ep/CMakeLists.txt).
file(READ ${KERNELS} _k)
file(READ ${ARGS} _a)
file(READ ${DEVICE} _d)
string(REPLACE "#pragma once" "" _k "${_k}")
file(WRITE ${OUT}.tmp "// Generated from ep/src/kernels.h and ep/src/cuda/device.cuh by ep/EmbedSource.cmake.
#include \"cuda/compiler.h\"

namespace onnxrl_ep {

const std::string& DeviceSource() {
  static const std::string* s = new std::string(R\"onnxrl_src(${_k}
#define ONNXRL_KERNEL_SIDE 1
${_a}
${_d})onnxrl_src\");
  return *s;
}

}  // namespace onnxrl_ep
")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
