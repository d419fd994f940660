#include "simd.h"

#include <cstdlib>
#include <cstring>

namespace onnxrl_ep {

namespace {

IsaLevel Choose() {
  const char* want = std::getenv("ONNXRL_EP_ISA");
  auto allowed = [&](const char* name) { return want == nullptr || want[0] == '\0' || std::strcmp(want, name) == 0; };
#if defined(ONNXRL_X86_ISAS)
  __builtin_cpu_init();
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                __builtin_cpu_supports("avx512vl");
  if (avx512 && allowed("avx512")) return IsaLevel::kAvx512;
  if (avx2 && (allowed("avx2") || (want != nullptr && std::strcmp(want, "avx512") == 0))) return IsaLevel::kAvx2;
#else
  (void)allowed;
#endif
  return IsaLevel::kPortable;
}

}  // namespace

IsaLevel ChosenIsa() {
  static const IsaLevel isa = Choose();
  return isa;
}

const char* Isa() {
  switch (ChosenIsa()) {
    case IsaLevel::kAvx512:
      return "avx512";
    case IsaLevel::kAvx2:
      return "avx2";
    default:
      return "portable";
  }
}

}  // namespace onnxrl_ep
