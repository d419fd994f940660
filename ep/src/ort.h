// The ONNX Runtime C API tables the provider uses, set once by CreateEpFactories, and small
// helpers that turn failures into OrtStatus values (nothing throws across the C boundary).
#pragma once

#include <onnxruntime_c_api.h>

#include <string>

namespace onnxrl_ep {

extern const OrtApi* g_ort;
extern const OrtEpApi* g_ep;

// The execution provider's name: the factory's, the EP's, and the one in the assignment record.
inline constexpr const char* kEpName = "OnnxrlNative";
inline constexpr const char* kVendor = "onnxrl";
inline constexpr const char* kVersion = "0.1.0";

inline OrtStatus* Fail(const std::string& msg) {
  return g_ort->CreateStatus(ORT_FAIL, (std::string(kEpName) + ": " + msg).c_str());
}
inline OrtStatus* InvalidArgument(const std::string& msg) {
  return g_ort->CreateStatus(ORT_INVALID_ARGUMENT, (std::string(kEpName) + ": " + msg).c_str());
}

// Error is thrown inside the provider only; every entry point catches it (see provider.cc).
struct Error {
  std::string msg;
};

// Check turns a failed runtime call into an Error carrying its message.
inline void Check(OrtStatus* st, const char* what) {
  if (st == nullptr) return;
  std::string msg = std::string(what) + ": " + g_ort->GetErrorMessage(st);
  g_ort->ReleaseStatus(st);
  throw Error{msg};
}

}  // namespace onnxrl_ep
