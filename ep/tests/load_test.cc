// Loads the provider into an ONNX Runtime library given by path (the pinned one in CTest; any
// newer release by hand: scripts/check-ep-runtime.sh), proving the version handshake:
//   test_ep_load LIBONNXRUNTIME LIBONNXRL_EP MODEL.onnx
// registers the library, finds its device, rejects a bad option and a second registration, and
// runs the model (input [2, 4] float32) through the provider and through the CPU provider.
// Exit 77 (skipped) when the runtime library is missing.
#include <onnxruntime_c_api.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ort_runtime.h"

namespace {

const OrtApi* api = nullptr;
int failures = 0;

bool Ok(OrtStatus* st, const char* what) {
  if (st == nullptr) return true;
  std::printf("FAIL %s: %s\n", what, api->GetErrorMessage(st));
  api->ReleaseStatus(st);
  failures++;
  return false;
}

bool FailsWith(OrtStatus* st, const char* want, const char* what) {
  if (st == nullptr) {
    std::printf("FAIL %s: no error\n", what);
    failures++;
    return false;
  }
  std::string msg = api->GetErrorMessage(st);
  api->ReleaseStatus(st);
  if (msg.find(want) == std::string::npos) {
    std::printf("FAIL %s: error %s does not mention %s\n", what, msg.c_str(), want);
    failures++;
    return false;
  }
  std::printf("ok   %s: %s\n", what, msg.c_str());
  return true;
}

// Run runs the model on a [2, 4] input and returns its first output.
std::vector<float> Run(OrtEnv* env, const char* model, OrtSessionOptions* so) {
  OrtSession* sess = nullptr;
  if (!Ok(api->CreateSession(env, model, so, &sess), "CreateSession")) return {};
  OrtMemoryInfo* mi = nullptr;
  Ok(api->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &mi), "CreateCpuMemoryInfo");
  float x[8] = {0.1f, -0.2f, 0.3f, 0.05f, -0.5f, 0.9f, 0.0f, -1.0f};
  int64_t shape[2] = {2, 4};
  OrtValue* in = nullptr;
  Ok(api->CreateTensorWithDataAsOrtValue(mi, x, sizeof x, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &in), "input");
  OrtAllocator* alloc = nullptr;
  Ok(api->GetAllocatorWithDefaultOptions(&alloc), "allocator");
  char* in_name = nullptr;
  char* out_name = nullptr;
  Ok(api->SessionGetInputName(sess, 0, alloc, &in_name), "input name");
  Ok(api->SessionGetOutputName(sess, 0, alloc, &out_name), "output name");
  OrtValue* out = nullptr;
  std::vector<float> res;
  if (Ok(api->Run(sess, nullptr, &in_name, &in, 1, &out_name, 1, &out), "Run")) {
    float* p = nullptr;
    Ok(api->GetTensorMutableData(out, reinterpret_cast<void**>(&p)), "output data");
    OrtTensorTypeAndShapeInfo* info = nullptr;
    size_t n = 0;
    Ok(api->GetTensorTypeAndShape(out, &info), "output shape");
    Ok(api->GetTensorShapeElementCount(info, &n), "output count");
    api->ReleaseTensorTypeAndShapeInfo(info);
    res.assign(p, p + n);
    api->ReleaseValue(out);
  }
  alloc->Free(alloc, in_name);
  alloc->Free(alloc, out_name);
  api->ReleaseValue(in);
  api->ReleaseMemoryInfo(mi);
  api->ReleaseSession(sess);
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: test_ep_load LIBONNXRUNTIME LIBONNXRL_EP MODEL.onnx\n");
    return 2;
  }
  int code = 0;
  api = onnxrl_ep_test::LoadRuntime(argv[1], &code);
  if (api == nullptr) return code;
  OrtEnv* env = nullptr;
  if (!Ok(api->CreateEnv(ORT_LOGGING_LEVEL_ERROR, "test_ep_load", &env), "CreateEnv")) return 1;
  if (!Ok(api->RegisterExecutionProviderLibrary(env, "onnxrl_native", argv[2]), "RegisterExecutionProviderLibrary")) return 1;
  FailsWith(api->RegisterExecutionProviderLibrary(env, "onnxrl_native", argv[2]), "", "second registration is refused");

  const OrtEpDevice* const* devs = nullptr;
  size_t ndev = 0;
  Ok(api->GetEpDevices(env, &devs, &ndev), "GetEpDevices");
  const OrtEpDevice* ours = nullptr;
  for (size_t i = 0; i < ndev; i++) {
    std::printf("     device %zu: %s\n", i, api->EpDevice_EpName(devs[i]));
    if (std::strcmp(api->EpDevice_EpName(devs[i]), "OnnxrlNative") == 0) ours = devs[i];
  }
  if (ours == nullptr) {
    std::printf("FAIL: GetEpDevices does not list OnnxrlNative\n");
    return 1;
  }

  OrtSessionOptions* bad = nullptr;
  Ok(api->CreateSessionOptions(&bad), "CreateSessionOptions");
  const char* bk[] = {"bogus"};
  const char* bv[] = {"1"};
  Ok(api->SessionOptionsAppendExecutionProvider_V2(bad, env, &ours, 1, bk, bv, 1), "append with a bad option");
  OrtSession* sess = nullptr;
  FailsWith(api->CreateSession(env, argv[3], bad, &sess), "unknown provider option", "a bad option fails the session");
  api->ReleaseSessionOptions(bad);

  OrtSessionOptions* so = nullptr;
  Ok(api->CreateSessionOptions(&so), "CreateSessionOptions");
  const char* k[] = {"backend"};
  const char* v[] = {"host"};
  Ok(api->SessionOptionsAppendExecutionProvider_V2(so, env, &ours, 1, k, v, 1), "append");
  std::vector<float> got = Run(env, argv[3], so);
  api->ReleaseSessionOptions(so);
  OrtSessionOptions* cpu = nullptr;
  Ok(api->CreateSessionOptions(&cpu), "CreateSessionOptions");
  std::vector<float> want = Run(env, argv[3], cpu);
  api->ReleaseSessionOptions(cpu);
  if (got.empty() || got.size() != want.size()) {
    std::printf("FAIL: %zu outputs through the provider, %zu through the CPU provider\n", got.size(), want.size());
    failures++;
  }
  for (size_t i = 0; i < got.size() && i < want.size(); i++) {
    if (!(std::fabs(got[i] - want[i]) <= 1e-5f * std::fmax(1.0f, std::fabs(want[i])))) {
      std::printf("FAIL: output %zu: %g through the provider, %g through the CPU provider\n", i, got[i], want[i]);
      failures++;
    }
  }
  if (failures == 0) std::printf("ok   the model's outputs equal the CPU provider's (%zu values)\n", got.size());
  api->ReleaseEnv(env);
  return failures ? 1 : 0;
}
