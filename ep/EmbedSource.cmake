# Writes OUT, a C++ file defining onnxrl_ep::DeviceSource(): the text of kernels.h followed by
# device.cuh, the CUDA source NVRTC compiles at run time. Run by the build (ep/CMakeLists.txt).
file(READ ${KERNELS} _k)
file(READ ${DEVICE} _d)
string(REPLACE "#pragma once" "" _k "${_k}")
file(WRITE ${OUT}.tmp "// Generated from ep/src/kernels.h and ep/src/cuda/device.cuh by ep/EmbedSource.cmake.
#include \"cuda/compiler.h\"

namespace onnxrl_ep {

const std::string& DeviceSource() {
  static const std::string* s = new std::string(R\"onnxrl_src(${_k}
${_d})onnxrl_src\");
  return *s;
}

}  // namespace onnxrl_ep
")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
