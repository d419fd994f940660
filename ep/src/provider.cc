// The plugin entry points: CreateEpFactories / ReleaseEpFactory, the factory, the EP
// (GetCapability, Compile) and the provider options. Every callback is noexcept and turns
// failures into OrtStatus values.
#include <cctype>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "cuda/cuda_exec.h"
#include "plan.h"

#define ONNXRL_EP_EXPORT extern "C" __attribute__((visibility("default")))

namespace onnxrl_ep {

const OrtApi* g_ort = nullptr;
const OrtEpApi* g_ep = nullptr;

namespace {

void Log(const OrtLogger* logger, OrtLoggingLevel level, const std::string& msg) noexcept {
  if (logger == nullptr) return;
  OrtStatus* st = g_ort->Logger_LogMessage(logger, level, (std::string(kEpName) + ": " + msg).c_str(), __FILE__,
                                           __LINE__, "onnxrl_ep");
  if (st != nullptr) g_ort->ReleaseStatus(st);
}

// Guard runs f, turning anything thrown into a status.
template <typename F>
OrtStatus* Guard(const char* what, F&& f) noexcept {
  try {
    return f();
  } catch (Error& e) {
    return Fail(std::string(what) + ": " + e.msg);
  } catch (std::exception& e) {
    return Fail(std::string(what) + ": " + e.what());
  } catch (...) {
    return Fail(std::string(what) + ": unknown failure");
  }
}

bool EqualFold(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

struct Options {
  std::string backend = "host";
  int device_id = 0;
};

// ParseOptions reads the provider options the session carries as "ep.<name>.<key>" entries.
OrtStatus* ParseOptions(const OrtSessionOptions* so, Options* out) {
  OrtKeyValuePairs* kv = nullptr;
  if (OrtStatus* st = g_ort->GetSessionOptionsConfigEntries(so, &kv)) return st;
  const char* const* keys = nullptr;
  const char* const* vals = nullptr;
  size_t n = 0;
  g_ort->GetKeyValuePairs(kv, &keys, &vals, &n);
  std::string err;
  for (size_t i = 0; i < n && err.empty(); i++) {
    std::string k = keys[i];
    std::string prefix = "ep.";
    if (k.compare(0, prefix.size(), prefix) != 0) continue;
    size_t dot = k.find('.', prefix.size());
    if (dot == std::string::npos || !EqualFold(k.substr(prefix.size(), dot - prefix.size()), kEpName)) continue;
    std::string name = k.substr(dot + 1), val = vals[i] ? vals[i] : "";
    if (name == "backend") {
      if (val == "host" || val == "cuda") {
        out->backend = val;
      } else {
        err = "unknown backend \"" + val + "\" (want host or cuda)";
      }
    } else if (name == "device_id") {
      char* end = nullptr;
      long id = std::strtol(val.c_str(), &end, 10);
      if (val.empty() || *end != '\0' || id < 0 || id > 1 << 20) {
        err = "device_id \"" + val + "\" is not a non-negative integer";
      } else {
        out->device_id = static_cast<int>(id);
      }
    } else {
      err = "unknown provider option \"" + name + "\" (known: backend, device_id)";
    }
  }
  g_ort->ReleaseKeyValuePairs(kv);
  if (err.empty() && out->backend == "host" && out->device_id != 0) {
    err = "device_id " + std::to_string(out->device_id) + ": the host backend has only device 0";
  }
  return err.empty() ? nullptr : InvalidArgument(err);
}

struct Ep;

// ComputeInfo holds one compiled partition's executor: the host backend's or the CUDA
// backend's, chosen once in Compile (its Compute function is that backend's).
struct ComputeInfo : OrtNodeComputeInfo {
  std::unique_ptr<Executor> host;
  std::unique_ptr<CudaExecutor> cuda;
};

struct Ep : OrtEp {
  const OrtLogger* logger = nullptr;
  Options opts;
  CudaDevice* cuda = nullptr;  // the GPU of the CUDA backend, opened in CreateEp
};

bool WorthAPartition(const std::vector<const OrtNode*>& group) {
  for (const OrtNode* n : group) {
    std::string op = OpType(n);
    if (op == "MatMul" || op == "Gemm" || op == "Conv" || op == "LSTM" || op == "GRU") return true;
  }
  return false;
}

OrtStatus* AddGroup(Ep* ep, OrtEpGraphSupportInfo* info, std::vector<const OrtNode*>& group) {
  if (group.empty()) return nullptr;
  if (!WorthAPartition(group)) {
    std::string names;
    for (const OrtNode* n : group) names += (names.empty() ? "" : ", ") + NodeName(n);
    Log(ep->logger, ORT_LOGGING_LEVEL_WARNING,
        "left on the CPU provider: supported nodes [" + names + "] form a group without a matrix multiply or recurrence (no gain from a partition)");
    group.clear();
    return nullptr;
  }
  OrtNodeFusionOptions fo{};
  fo.ort_version_supported = ORT_API_VERSION;
  fo.drop_constant_initializers = true;
  OrtStatus* st = g_ep->EpGraphSupportInfo_AddNodesToFuse(info, group.data(), group.size(), &fo);
  group.clear();
  return st;
}

// GetCapability claims maximal groups of supported nodes. Walking in topological order, a
// supported node joins the current group unless it depends on a node outside the group that
// depends on the group (fusing it would make a cycle, which the runtime rejects); then the
// group is closed and a new one starts with it.
OrtStatus* ORT_API_CALL GetCapability(OrtEp* this_ptr, const OrtGraph* graph, OrtEpGraphSupportInfo* info) noexcept {
  Ep* ep = static_cast<Ep*>(this_ptr);
  return Guard("GetCapability", [&]() -> OrtStatus* {
    std::vector<const OrtNode*> group;
    std::unordered_set<size_t> in_group, after_group;  // after_group: outside, downstream of the group
    for (const OrtNode* n : GraphNodes(graph)) {
      size_t id = NodeId(n);
      bool depends_on_group = false, depends_on_after = false;
      for (const OrtValueInfo* v : NodeInputs(n)) {
        const OrtNode* p = Producer(v);
        if (p == nullptr) continue;
        size_t pid = NodeId(p);
        if (in_group.count(pid)) depends_on_group = true;
        if (after_group.count(pid)) depends_on_after = true;
      }
      std::string reason;
      try {
        Plan scratch;
        LowerNode(n, scratch);
      } catch (Error& e) {
        reason = e.msg;
      }
      if (!reason.empty()) {
        Log(ep->logger, ORT_LOGGING_LEVEL_WARNING,
            "node " + NodeName(n) + " (" + OpType(n) + ") left on the CPU provider: " + reason);
        if (depends_on_group || depends_on_after) after_group.insert(id);
        continue;
      }
      if (depends_on_after) {
        Log(ep->logger, ORT_LOGGING_LEVEL_INFO,
            "node " + NodeName(n) + " starts a new partition: it depends on a node the provider does not run");
        if (OrtStatus* st = AddGroup(ep, info, group)) return st;
        in_group.clear();
        after_group.clear();
      }
      group.push_back(n);
      in_group.insert(id);
    }
    return AddGroup(ep, info, group);
  });
}

OrtStatus* ORT_API_CALL CreateHostState(OrtNodeComputeInfo* this_ptr, OrtNodeComputeContext*, void** state) noexcept {
  *state = static_cast<ComputeInfo*>(this_ptr)->host.get();
  return nullptr;
}

OrtStatus* ORT_API_CALL ComputeHost(OrtNodeComputeInfo*, void* state, OrtKernelContext* ctx) noexcept {
  return static_cast<Executor*>(state)->Compute(ctx);
}

OrtStatus* ORT_API_CALL CreateCudaState(OrtNodeComputeInfo* this_ptr, OrtNodeComputeContext*, void** state) noexcept {
  *state = static_cast<ComputeInfo*>(this_ptr)->cuda.get();
  return nullptr;
}

OrtStatus* ORT_API_CALL ComputeCuda(OrtNodeComputeInfo*, void* state, OrtKernelContext* ctx) noexcept {
  return static_cast<CudaExecutor*>(state)->Compute(ctx);
}

void ORT_API_CALL ReleaseState(OrtNodeComputeInfo*, void*) noexcept {}

OrtStatus* ORT_API_CALL Compile(OrtEp* this_ptr, const OrtGraph** graphs, const OrtNode** fused, size_t count,
                                OrtNodeComputeInfo** infos, OrtNode** ctx_nodes) noexcept {
  Ep* ep = static_cast<Ep*>(this_ptr);
  for (size_t i = 0; i < count; i++) {
    infos[i] = nullptr;
    ctx_nodes[i] = nullptr;
  }
  OrtStatus* st = Guard("Compile", [&]() -> OrtStatus* {
    for (size_t i = 0; i < count; i++) {
      auto info = std::make_unique<ComputeInfo>();
      info->ort_version_supported = ORT_API_VERSION;
      info->ReleaseState = ReleaseState;
      std::string where;
      if (ep->cuda != nullptr) {
        info->CreateState = CreateCudaState;
        info->Compute = ComputeCuda;
        info->cuda = std::make_unique<CudaExecutor>(BuildPlan(graphs[i], fused[i]), *ep->cuda);
        where = "the cuda backend (" + ep->cuda->name + ", " + std::to_string(info->cuda->fused()) +
                " fused dense groups)";
      } else {
        info->CreateState = CreateHostState;
        info->Compute = ComputeHost;
        info->host = std::make_unique<Executor>(BuildPlan(graphs[i], fused[i]));
        where = "the host backend";
      }
      const Plan& p = info->cuda ? info->cuda->plan() : info->host->plan();
      Log(ep->logger, ORT_LOGGING_LEVEL_INFO, p.name + ": " + std::to_string(p.steps.size()) + " steps on " + where);
      infos[i] = info.release();
    }
    return nullptr;
  });
  if (st != nullptr) {
    for (size_t i = 0; i < count; i++) {
      delete static_cast<ComputeInfo*>(infos[i]);
      infos[i] = nullptr;
    }
  }
  return st;
}

void ORT_API_CALL ReleaseNodeComputeInfos(OrtEp*, OrtNodeComputeInfo** infos, size_t n) noexcept {
  for (size_t i = 0; i < n; i++) delete static_cast<ComputeInfo*>(infos[i]);
}

const char* ORT_API_CALL EpGetName(const OrtEp*) noexcept { return kEpName; }

OrtStatus* ORT_API_CALL GetPreferredDataLayout(OrtEp*, OrtEpDataLayout* layout) noexcept {
  *layout = OrtEpDataLayout_NCHW;
  return nullptr;
}

OrtStatus* ORT_API_CALL ShouldConvertDataLayoutForOp(OrtEp*, const char*, const char*, OrtEpDataLayout,
                                                     int* should_convert) noexcept {
  *should_convert = -1;  // the runtime decides
  return nullptr;
}

OrtStatus* ORT_API_CALL SetDynamicOptions(OrtEp*, const char* const*, const char* const*, size_t n) noexcept {
  return n == 0 ? nullptr : InvalidArgument("the provider has no dynamic options");
}

OrtStatus* ORT_API_CALL OnRunStart(OrtEp*, const OrtRunOptions*) noexcept { return nullptr; }
OrtStatus* ORT_API_CALL OnRunEnd(OrtEp*, const OrtRunOptions*, bool) noexcept { return nullptr; }

OrtStatus* ORT_API_CALL EpCreateAllocator(OrtEp*, const OrtMemoryInfo*, OrtAllocator** allocator) noexcept {
  *allocator = nullptr;
  return nullptr;
}

OrtStatus* ORT_API_CALL EpCreateSyncStream(OrtEp*, const OrtMemoryDevice*, OrtSyncStreamImpl** stream) noexcept {
  *stream = nullptr;
  return nullptr;
}

const char* ORT_API_CALL GetCompiledModelCompatibilityInfo(OrtEp*, const OrtGraph*) noexcept { return ""; }

OrtStatus* ORT_API_CALL GetKernelRegistry(OrtEp*, const OrtKernelRegistry** reg) noexcept {
  *reg = nullptr;
  return nullptr;
}

OrtStatus* ORT_API_CALL IsConcurrentRunSupported(OrtEp*, bool* supported) noexcept {
  *supported = true;  // each plan serializes its runs
  return nullptr;
}

// ---- the factory ----

struct Factory : OrtEpFactory {
  std::string registered_name;
  const OrtLogger* logger = nullptr;
};

const char* ORT_API_CALL FactoryGetName(const OrtEpFactory*) noexcept { return kEpName; }
const char* ORT_API_CALL FactoryGetVendor(const OrtEpFactory*) noexcept { return kVendor; }
uint32_t ORT_API_CALL FactoryGetVendorId(const OrtEpFactory*) noexcept { return 0; }
const char* ORT_API_CALL FactoryGetVersion(const OrtEpFactory*) noexcept { return kVersion; }

OrtStatus* ORT_API_CALL GetSupportedDevices(OrtEpFactory* f, const OrtHardwareDevice* const* devices, size_t n,
                                            OrtEpDevice** ep_devices, size_t max, size_t* num) noexcept {
  *num = 0;
  for (size_t i = 0; i < n && *num < max; i++) {
    if (g_ort->HardwareDevice_Type(devices[i]) != OrtHardwareDeviceType_CPU) continue;
    OrtKeyValuePairs* meta = nullptr;
    g_ort->CreateKeyValuePairs(&meta);
    g_ort->AddKeyValuePair(meta, "backends", "host,cuda");
    OrtEpDevice* d = nullptr;
    OrtStatus* st = g_ep->CreateEpDevice(f, devices[i], meta, nullptr, &d);
    g_ort->ReleaseKeyValuePairs(meta);
    if (st != nullptr) return st;
    ep_devices[(*num)++] = d;
    break;  // one CPU device is enough
  }
  return nullptr;
}

OrtStatus* ORT_API_CALL CreateEp(OrtEpFactory*, const OrtHardwareDevice* const*, const OrtKeyValuePairs* const*,
                                 size_t, const OrtSessionOptions* so, const OrtLogger* logger, OrtEp** out) noexcept {
  *out = nullptr;
  return Guard("CreateEp", [&]() -> OrtStatus* {
    Options opts;
    if (OrtStatus* st = ParseOptions(so, &opts)) return st;
    auto ep = std::make_unique<Ep>();
    ep->ort_version_supported = ORT_API_VERSION;
    ep->GetName = EpGetName;
    ep->GetCapability = GetCapability;
    ep->Compile = Compile;
    ep->ReleaseNodeComputeInfos = ReleaseNodeComputeInfos;
    ep->GetPreferredDataLayout = GetPreferredDataLayout;
    ep->ShouldConvertDataLayoutForOp = ShouldConvertDataLayoutForOp;
    ep->SetDynamicOptions = SetDynamicOptions;
    ep->OnRunStart = OnRunStart;
    ep->OnRunEnd = OnRunEnd;
    ep->CreateAllocator = EpCreateAllocator;
    ep->CreateSyncStreamForDevice = EpCreateSyncStream;
    ep->GetCompiledModelCompatibilityInfo = GetCompiledModelCompatibilityInfo;
    ep->GetKernelRegistry = GetKernelRegistry;
    ep->IsConcurrentRunSupported = IsConcurrentRunSupported;
    ep->logger = logger;
    ep->opts = opts;
    if (opts.backend == "cuda") {
      try {
        ep->cuda = &OpenCudaDevice(opts.device_id);
      } catch (Error& e) {
        return InvalidArgument("backend cuda, device_id " + std::to_string(opts.device_id) + ": " + e.msg);
      }
    }
    *out = ep.release();
    return nullptr;
  });
}

void ORT_API_CALL ReleaseEp(OrtEpFactory*, OrtEp* ep) noexcept { delete static_cast<Ep*>(ep); }

OrtStatus* ORT_API_CALL ValidateCompiledModelCompatibilityInfo(OrtEpFactory*, const OrtHardwareDevice* const*, size_t,
                                                               const char*, OrtCompiledModelCompatibility* c) noexcept {
  *c = OrtCompiledModelCompatibility_EP_NOT_APPLICABLE;
  return nullptr;
}

OrtStatus* ORT_API_CALL FactoryCreateAllocator(OrtEpFactory*, const OrtMemoryInfo*, const OrtKeyValuePairs*,
                                               OrtAllocator** allocator) noexcept {
  *allocator = nullptr;
  return nullptr;
}

void ORT_API_CALL FactoryReleaseAllocator(OrtEpFactory*, OrtAllocator*) noexcept {}

// The runtime calls this during registration without a null check (1.24.1): it must exist.
OrtStatus* ORT_API_CALL CreateDataTransfer(OrtEpFactory*, OrtDataTransferImpl** out) noexcept {
  *out = nullptr;
  return nullptr;
}

bool ORT_API_CALL IsStreamAware(const OrtEpFactory*) noexcept { return false; }

OrtStatus* ORT_API_CALL FactoryCreateSyncStream(OrtEpFactory*, const OrtMemoryDevice*, const OrtKeyValuePairs*,
                                                OrtSyncStreamImpl** stream) noexcept {
  *stream = nullptr;
  return nullptr;
}

OrtStatus* ORT_API_CALL GetHardwareDeviceIncompatibilityDetails(OrtEpFactory*, const OrtHardwareDevice*,
                                                                OrtDeviceEpIncompatibilityDetails*) noexcept {
  return nullptr;
}

OrtStatus* ORT_API_CALL CreateExternalResourceImporter(OrtEpFactory*, const OrtEpDevice*,
                                                       OrtExternalResourceImporterImpl** out) noexcept {
  *out = nullptr;
  return nullptr;
}

OrtStatus* ORT_API_CALL GetNumCustomOpDomains(OrtEpFactory*, size_t* n) noexcept {
  *n = 0;
  return nullptr;
}

OrtStatus* ORT_API_CALL GetCustomOpDomains(OrtEpFactory*, OrtCustomOpDomain**, size_t) noexcept { return nullptr; }

}  // namespace
}  // namespace onnxrl_ep

using namespace onnxrl_ep;

ONNXRL_EP_EXPORT OrtStatus* CreateEpFactories(const char* registered_name, const OrtApiBase* base,
                                              const OrtLogger* logger, OrtEpFactory** factories, size_t max,
                                              size_t* num) noexcept {
  *num = 0;
  const OrtApi* api = base->GetApi(ORT_API_VERSION);
  if (api == nullptr) {
    // An older runtime: version 1 of the table still creates the status that says so.
    const OrtApi* v1 = base->GetApi(1);
    std::string msg = std::string(kEpName) + ": needs ONNX Runtime API version " + std::to_string(ORT_API_VERSION) +
                      " (1.24) or newer; this runtime is " + base->GetVersionString();
    return v1 ? v1->CreateStatus(ORT_NOT_IMPLEMENTED, msg.c_str()) : nullptr;
  }
  g_ort = api;
  g_ep = api->GetEpApi();
  if (max < 1) return InvalidArgument("no room for the factory");
  try {
    auto f = std::make_unique<Factory>();
    f->ort_version_supported = ORT_API_VERSION;
    f->GetName = FactoryGetName;
    f->GetVendor = FactoryGetVendor;
    f->GetSupportedDevices = GetSupportedDevices;
    f->CreateEp = CreateEp;
    f->ReleaseEp = ReleaseEp;
    f->GetVendorId = FactoryGetVendorId;
    f->GetVersion = FactoryGetVersion;
    f->ValidateCompiledModelCompatibilityInfo = ValidateCompiledModelCompatibilityInfo;
    f->CreateAllocator = FactoryCreateAllocator;
    f->ReleaseAllocator = FactoryReleaseAllocator;
    f->CreateDataTransfer = CreateDataTransfer;
    f->IsStreamAware = IsStreamAware;
    f->CreateSyncStreamForDevice = FactoryCreateSyncStream;
    f->GetHardwareDeviceIncompatibilityDetails = GetHardwareDeviceIncompatibilityDetails;
    f->CreateExternalResourceImporterForDevice = CreateExternalResourceImporter;
    f->GetNumCustomOpDomains = GetNumCustomOpDomains;
    f->GetCustomOpDomains = GetCustomOpDomains;
    f->registered_name = registered_name ? registered_name : "";
    f->logger = logger;
    factories[0] = f.release();
    *num = 1;
    return nullptr;
  } catch (...) {
    return Fail("out of memory creating the factory");
  }
}

ONNXRL_EP_EXPORT OrtStatus* ReleaseEpFactory(OrtEpFactory* factory) noexcept {
  delete static_cast<Factory*>(factory);
  return nullptr;
}
