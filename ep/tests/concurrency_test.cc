// Concurrent runs of one session on the provider (Executor::Compute, exec.cc: each call takes a
// run of its own, so calls may proceed at once):
//   test_ep_concurrency LIBONNXRUNTIME LIBONNXRL_EP MODEL.onnx...
// For each model, one session with two intra-op threads and no CPU fallback (every node on the
// provider) runs the same inputs first one after another, then from four threads at once, 200
// runs each with inputs of their own and batch sizes 1, 7 and 256 in turn; every output of
// the concurrent runs must equal the serial one bit for bit (the same kernels on the same
// rows), and within 1e-6 at the very least. Runs that shared an intermediate buffer would mix
// their values. Every dynamic dimension of an input is taken to be the batch. Exit 77 (skipped)
// when the runtime library is missing.
#include <onnxruntime_c_api.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ort_runtime.h"

namespace {

const OrtApi* api = nullptr;
std::atomic<int> failures{0};

bool Ok(OrtStatus* st, const char* what) {
  if (st == nullptr) return true;
  std::printf("FAIL %s: %s\n", what, api->GetErrorMessage(st));
  api->ReleaseStatus(st);
  failures++;
  return false;
}

constexpr int kThreads = 4;
constexpr int kRunsPerThread = 200;
constexpr int64_t kBatches[] = {1, 7, 256};

// Model is a session and its inputs' and outputs' names and shapes (-1: the batch).
struct Model {
  OrtSession* sess = nullptr;
  std::vector<std::string> in_names, out_names;
  std::vector<const char*> in_ptrs, out_ptrs;
  std::vector<std::vector<int64_t>> in_shapes;
};

// Case is one run: its inputs and the outputs the serial run gave.
struct Case {
  int64_t batch = 0;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<float>> inputs;
  std::vector<std::vector<float>> want;
};

bool Open(OrtEnv* env, const OrtEpDevice* ours, const char* path, Model& m) {
  OrtSessionOptions* so = nullptr;
  if (!Ok(api->CreateSessionOptions(&so), "CreateSessionOptions")) return false;
  const char* k[] = {"backend"};
  const char* v[] = {"host"};
  bool ok = Ok(api->SetIntraOpNumThreads(so, 2), "SetIntraOpNumThreads") &&
            // Every node on the provider, or no session: the test is about its runs.
            Ok(api->AddSessionConfigEntry(so, "session.disable_cpu_ep_fallback", "1"), "disable CPU fallback") &&
            Ok(api->SessionOptionsAppendExecutionProvider_V2(so, env, &ours, 1, k, v, 1), "append") &&
            Ok(api->CreateSession(env, path, so, &m.sess), "CreateSession");
  api->ReleaseSessionOptions(so);
  if (!ok) return false;
  OrtAllocator* alloc = nullptr;
  Ok(api->GetAllocatorWithDefaultOptions(&alloc), "allocator");
  size_t nin = 0, nout = 0;
  Ok(api->SessionGetInputCount(m.sess, &nin), "input count");
  Ok(api->SessionGetOutputCount(m.sess, &nout), "output count");
  for (size_t i = 0; i < nin; i++) {
    char* name = nullptr;
    if (!Ok(api->SessionGetInputName(m.sess, i, alloc, &name), "input name")) return false;
    m.in_names.push_back(name);
    alloc->Free(alloc, name);
    OrtTypeInfo* ti = nullptr;
    const OrtTensorTypeAndShapeInfo* tsi = nullptr;
    size_t rank = 0;
    ONNXTensorElementDataType type;
    if (!Ok(api->SessionGetInputTypeInfo(m.sess, i, &ti), "input type") ||
        !Ok(api->CastTypeInfoToTensorInfo(ti, &tsi), "input tensor info") ||
        !Ok(api->GetTensorElementType(tsi, &type), "input element type") ||
        !Ok(api->GetDimensionsCount(tsi, &rank), "input rank"))
      return false;
    std::vector<int64_t> dims(rank);
    Ok(api->GetDimensions(tsi, dims.data(), rank), "input dims");
    api->ReleaseTypeInfo(ti);
    if (type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
      std::printf("FAIL %s: input %s is not float32\n", path, m.in_names.back().c_str());
      failures++;
      return false;
    }
    m.in_shapes.push_back(dims);
  }
  for (size_t i = 0; i < nout; i++) {
    char* name = nullptr;
    if (!Ok(api->SessionGetOutputName(m.sess, i, alloc, &name), "output name")) return false;
    m.out_names.push_back(name);
    alloc->Free(alloc, name);
  }
  for (auto& n : m.in_names) m.in_ptrs.push_back(n.c_str());
  for (auto& n : m.out_names) m.out_ptrs.push_back(n.c_str());
  std::printf("     %s:", path);
  for (size_t i = 0; i < nin; i++) {
    std::printf(" %s[", m.in_names[i].c_str());
    for (size_t d = 0; d < m.in_shapes[i].size(); d++) std::printf(d ? ",%lld" : "%lld", (long long)m.in_shapes[i][d]);
    std::printf("]");
  }
  std::printf(" -> %zu outputs\n", nout);
  return true;
}

// MakeCase fills the inputs of a run of the given batch with values of its own seed.
Case MakeCase(const Model& m, int64_t batch, uint32_t seed) {
  Case c;
  c.batch = batch;
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  for (const auto& shape : m.in_shapes) {
    std::vector<int64_t> s = shape;
    size_t n = 1;
    for (auto& dim : s) {
      if (dim < 0) dim = batch;
      n *= static_cast<size_t>(dim);
    }
    std::vector<float> x(n);
    for (auto& v : x) v = d(g);
    c.shapes.push_back(s);
    c.inputs.push_back(std::move(x));
  }
  return c;
}

// Run runs c's inputs through m and returns every output (empty on failure).
std::vector<std::vector<float>> Run(const Model& m, Case& c, OrtMemoryInfo* mi) {
  std::vector<OrtValue*> ins(c.inputs.size(), nullptr), outs(m.out_names.size(), nullptr);
  std::vector<std::vector<float>> res;
  bool ok = true;
  for (size_t i = 0; i < c.inputs.size() && ok; i++)
    ok = Ok(api->CreateTensorWithDataAsOrtValue(mi, c.inputs[i].data(), c.inputs[i].size() * sizeof(float),
                                                c.shapes[i].data(), c.shapes[i].size(),
                                                ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &ins[i]),
            "input");
  if (ok)
    ok = Ok(api->Run(m.sess, nullptr, m.in_ptrs.data(), ins.data(), ins.size(), m.out_ptrs.data(), outs.size(),
                     outs.data()),
            "Run");
  for (size_t i = 0; i < outs.size() && ok; i++) {
    float* p = nullptr;
    OrtTensorTypeAndShapeInfo* info = nullptr;
    size_t n = 0;
    ok = Ok(api->GetTensorMutableData(outs[i], reinterpret_cast<void**>(&p)), "output data") &&
         Ok(api->GetTensorTypeAndShape(outs[i], &info), "output shape") &&
         Ok(api->GetTensorShapeElementCount(info, &n), "output count");
    if (info != nullptr) api->ReleaseTensorTypeAndShapeInfo(info);
    if (ok) res.emplace_back(p, p + n);
  }
  for (OrtValue* v : ins)
    if (v != nullptr) api->ReleaseValue(v);
  for (OrtValue* v : outs)
    if (v != nullptr) api->ReleaseValue(v);
  if (!ok) res.clear();
  return res;
}

void TestModel(OrtEnv* env, const OrtEpDevice* ours, const char* path) {
  Model m;
  if (!Open(env, ours, path, m)) return;
  OrtMemoryInfo* mi = nullptr;
  Ok(api->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &mi), "CreateCpuMemoryInfo");

  // The cases of each thread and their outputs run one after another. The threads take the
  // batch sizes in the same order, so that runs of one signature overlap most of the time.
  std::vector<std::vector<Case>> cases(kThreads);
  for (int t = 0; t < kThreads; t++)
    for (int i = 0; i < kRunsPerThread; i++) {
      Case c = MakeCase(m, kBatches[i % 3], static_cast<uint32_t>(t * 100003 + i));
      c.want = Run(m, c, mi);
      if (c.want.empty()) {
        std::printf("FAIL %s: the serial run of thread %d's case %d failed\n", path, t, i);
        failures++;
        api->ReleaseMemoryInfo(mi);
        api->ReleaseSession(m.sess);
        return;
      }
      cases[t].push_back(std::move(c));
    }

  // The same cases from kThreads threads at once, started together.
  std::atomic<int> ready{0};
  std::atomic<int> inexact{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++)
    threads.emplace_back([&, t] {
      ready++;
      while (ready.load() < kThreads) std::this_thread::yield();
      for (int i = 0; i < kRunsPerThread; i++) {
        Case& c = cases[t][i];
        std::vector<std::vector<float>> got = Run(m, c, mi);
        bool bad = got.size() != c.want.size();
        bool differs = false;
        for (size_t o = 0; o < got.size() && !bad; o++) {
          if (got[o].size() != c.want[o].size()) {
            bad = true;
            break;
          }
          for (size_t j = 0; j < got[o].size(); j++) {
            if (std::memcmp(&got[o][j], &c.want[o][j], sizeof(float)) == 0) continue;
            differs = true;
            if (!(std::fabs(got[o][j] - c.want[o][j]) <= 1e-6f)) {
              if (wrong++ < 5)
                std::printf("FAIL %s: thread %d run %d (batch %lld) output %s[%zu] = %.9g, serially %.9g\n", path,
                            t, i, (long long)c.batch, m.out_names[o].c_str(), j, got[o][j], c.want[o][j]);
              bad = true;
              break;
            }
          }
        }
        if (bad) failures++;
        if (differs && !bad) inexact++;
      }
    });
  for (auto& th : threads) th.join();
  if (inexact > 0)
    std::printf("note %s: %d concurrent runs differ from the serial ones within 1e-6, not bit for bit\n", path,
                inexact.load());
  if (wrong == 0)
    std::printf("ok   %s: %d threads x %d runs (batches 1, 7, 256) equal the serial runs\n", path, kThreads,
                kRunsPerThread);
  api->ReleaseMemoryInfo(mi);
  api->ReleaseSession(m.sess);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: test_ep_concurrency LIBONNXRUNTIME LIBONNXRL_EP MODEL.onnx...\n");
    return 2;
  }
  int code = 0;
  api = onnxrl_ep_test::LoadRuntime(argv[1], &code);
  if (api == nullptr) return code;
  OrtEnv* env = nullptr;
  if (!Ok(api->CreateEnv(ORT_LOGGING_LEVEL_ERROR, "test_ep_concurrency", &env), "CreateEnv")) return 1;
  if (!Ok(api->RegisterExecutionProviderLibrary(env, "onnxrl_native", argv[2]), "RegisterExecutionProviderLibrary"))
    return 1;
  const OrtEpDevice* const* devs = nullptr;
  size_t ndev = 0;
  Ok(api->GetEpDevices(env, &devs, &ndev), "GetEpDevices");
  const OrtEpDevice* ours = nullptr;
  for (size_t i = 0; i < ndev; i++)
    if (std::strcmp(api->EpDevice_EpName(devs[i]), "OnnxrlNative") == 0) ours = devs[i];
  if (ours == nullptr) {
    std::printf("FAIL: GetEpDevices does not list OnnxrlNative\n");
    return 1;
  }
  for (int i = 3; i < argc; i++) TestModel(env, ours, argv[i]);
  api->ReleaseEnv(env);
  if (failures) {
    std::printf("%d failures\n", failures.load());
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
