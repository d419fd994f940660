#include "cuda_exec.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "../ops/ops.h"
#include "../shape_util.h"
#include "compiler.h"
#include "device_args.h"
#include "pinned.h"

namespace onnxrl_ep {

namespace {

constexpr const char* kKernelNames[] = {"onnxrl_unary",   "onnxrl_binary",    "onnxrl_strided", "onnxrl_copy2d",
                                        "onnxrl_fill",    "onnxrl_softmax",   "onnxrl_gemm",    "onnxrl_mlp",
                                        "onnxrl_lstm_cell", "onnxrl_lstm_step", "onnxrl_gru_lbr", "onnxrl_gru_reset", "onnxrl_gru_out",
                                        "onnxrl_conv",    "onnxrl_pool",      "onnxrl_layernorm", "onnxrl_reduce_mean",
                                        "onnxrl_pad"};

// The fused MLP's shared memory: two tiles of rows x width floats within the 48 KiB every
// GPU gives a block without opting in.
constexpr int kMlpSmemBytes = 48 * 1024;
constexpr int kMlpMaxWidth = kMlpSmemBytes / (2 * 4 * sizeof(float));  // 4 rows at least: 1536

// Measured on an H200 (scripts/device-check.sh, one run, us per batch, staged through pinned
// chunks against direct): the MLP at batch 65,536 (1.75 MiB in and out) 393 against 443, the
// LSTM policy at 4,096 (2.2 MiB) 304 against 344, at 65,536 (34 MiB) 5,771 against 4,541.
constexpr size_t kDirectBytesDefault = size_t{4} << 20;

double Micros(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

std::string Version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

}  // namespace

bool UseGraphs() {
  static const bool use = [] {
    const char* v = std::getenv("ONNXRL_CUDA_GRAPHS");
    return v == nullptr || std::string(v) != "0";
  }();
  return use;
}

bool Overlap() {
  static const bool on = [] {
    const char* v = std::getenv("ONNXRL_CUDA_OVERLAP");
    return v == nullptr || std::string(v) != "0";
  }();
  return on;
}

bool GraphCopies() {
  static const bool on = [] {
    const char* v = std::getenv("ONNXRL_CUDA_GRAPH_COPIES");
    return v == nullptr || std::string(v) != "0";
  }();
  return on;
}

size_t DirectBytes() {
  static const size_t bytes = [] {
    const char* v = std::getenv("ONNXRL_CUDA_DIRECT_BYTES");
    return v != nullptr ? static_cast<size_t>(std::strtoull(v, nullptr, 10)) : kDirectBytesDefault;
  }();
  return bytes;
}

bool Profiling() {
  static const bool on = [] {
    const char* v = std::getenv("ONNXRL_CUDA_PROFILE");
    return v != nullptr && std::string(v) == "1";
  }();
  return on;
}

cu::CUfunction CudaDevice::Function(const std::string& fn) const {
  auto it = functions.find(fn);
  if (it == functions.end()) throw Error{"no CUDA kernel named " + fn};
  return it->second;
}

void CudaDevice::MakeCurrent() const { CuCheck(api(), api().cuCtxSetCurrent(ctx), "cuCtxSetCurrent"); }

CudaDevice& OpenCudaDevice(int id) {
  static std::mutex mu;
  static auto* devices = new std::map<int, std::unique_ptr<CudaDevice>>;  // kept for the process
  std::lock_guard<std::mutex> lock(mu);
  auto it = devices->find(id);
  if (it != devices->end()) return *it->second;
  const Driver& drv = LoadDriver();
  const cu::DriverApi& a = drv.api;
  if (id < 0 || id >= drv.devices) {
    throw Error{"device_id " + std::to_string(id) + ": this machine has " + std::to_string(drv.devices) +
                " CUDA device(s)"};
  }
  auto d = std::make_unique<CudaDevice>();
  d->driver = &drv;
  d->id = id;
  CuCheck(a, a.cuDeviceGet(&d->dev, id), "cuDeviceGet");
  char name[256] = {0};
  a.cuDeviceGetName(name, sizeof name - 1, d->dev);
  d->name = name;
  auto attribute = [&](int attrib) {
    int v = 0;
    CuCheck(a, a.cuDeviceGetAttribute(&v, attrib, d->dev), "cuDeviceGetAttribute");
    return v;
  };
  d->cc = attribute(cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 +
          attribute(cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  d->sms = attribute(cu::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  CuCheck(a, a.cuDevicePrimaryCtxRetain(&d->ctx, d->dev), "cuDevicePrimaryCtxRetain");
  try {
    d->MakeCurrent();
    const Nvrtc& nvrtc = LoadNvrtc(drv.version);
    d->nvrtc = "NVRTC " + std::to_string(nvrtc.major) + "." + std::to_string(nvrtc.minor) + " (" + nvrtc.path + ")";
    d->target = Target(nvrtc, d->cc);
    Image img = CachedImage(nvrtc, DeviceSource(), d->target);
    cu::CUresult r = a.cuModuleLoadData(&d->module, img.data.c_str());
    if (r != cu::CUDA_SUCCESS) {
      bool old_driver = r == cu::CUDA_ERROR_UNSUPPORTED_PTX_VERSION || r == cu::CUDA_ERROR_NO_BINARY_FOR_GPU;
      throw Error{"loading the kernels " + d->nvrtc + " built for " + d->target + " on " + d->name + " (driver " +
                  Version(drv.version) + "): " + CuError(a, r) +
                  (old_driver ? "; the driver is too old for this NVRTC: update the driver or set "
                                "ONNXRL_NVRTC_LIBRARY to an older NVRTC"
                              : "")};
    }
    for (const char* k : kKernelNames) {
      cu::CUfunction f = nullptr;
      CuCheck(a, a.cuModuleGetFunction(&f, d->module, k), k);
      d->functions[k] = f;
    }
  } catch (...) {
    if (d->module != nullptr) a.cuModuleUnload(d->module);
    a.cuDevicePrimaryCtxRelease_v2(d->dev);  // a later session tries again from the start
    throw;
  }
  CudaDevice& ref = *d;
  (*devices)[id] = std::move(d);
  return ref;
}

// ---- DeviceContext ----

const std::vector<int64_t>& DeviceContext::shape(int v) const { return run_.shapes.at(v); }
const std::vector<int64_t>& DeviceContext::aux() const { return run_.aux.at(step_); }
cu::CUdeviceptr DeviceContext::ptr(int v) const { return v < 0 ? 0 : dptr_.at(v); }
size_t DeviceContext::bytes(int v) const {
  return static_cast<size_t>(NumElements(run_.shapes.at(v))) * ElemSize(ex_.plan_.values.at(v).type);
}

cu::CUdeviceptr DeviceContext::Resident(const std::vector<float>& host) {
  if (host.empty()) return 0;
  auto it = ex_.resident_.find(host.data());
  if (it != ex_.resident_.end()) return it->second;
  if (capturing_) throw Error{"internal: weights uploaded while capturing a CUDA graph"};
  cu::CUdeviceptr p = 0;
  ex_.Alloc(&p, host.size() * sizeof(float), "weights");
  ex_.resident_[host.data()] = p;
  const auto& a = ex_.dev_.api();
  // On the executor's stream, which does not wait for the legacy one: a synchronous copy from
  // pageable memory may return before its DMA lands (the fake driver's ONNXRL_FAKECUDA_DEFER=2
  // caught the kernels reading weights still in flight). The host data outlives the copy.
  CuCheck(a, a.cuMemcpyHtoDAsync_v2(p, host.data(), host.size() * sizeof(float), ex_.stream_), "uploading weights");
  return p;
}

cu::CUdeviceptr DeviceContext::Scratch(size_t i, size_t floats) {
  auto key = std::make_pair(step_, i);
  auto it = scratch_.find(key);
  if (it != scratch_.end() && it->second.second >= floats) return it->second.first;
  if (capturing_) throw Error{"internal: scratch allocated while capturing a CUDA graph"};
  cu::CUdeviceptr p = 0;
  ex_.Alloc(&p, std::max<size_t>(floats, 1) * sizeof(float), "scratch");
  scratch_[key] = {p, floats};
  return p;
}

void DeviceContext::Static(cu::CUdeviceptr dst, const void* src, size_t bytes) {
  if (capturing_ || bytes == 0) return;
  const auto& a = ex_.dev_.api();
  CuCheck(a, a.cuMemcpyHtoDAsync_v2(dst, src, bytes, ex_.stream_), "cuMemcpyHtoDAsync");
}

void DeviceContext::Copy(cu::CUdeviceptr dst, cu::CUdeviceptr src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  const auto& a = ex_.dev_.api();
  CuCheck(a, a.cuMemcpyDtoDAsync_v2(dst, src, bytes, ex_.stream_), "cuMemcpyDtoDAsync");
}

void DeviceContext::Launch(const char* kernel, unsigned gx, unsigned gy, unsigned block, unsigned smem,
                           std::initializer_list<void*> args) {
  if (gx == 0 || gy == 0) return;
  const auto& a = ex_.dev_.api();
  void* params[16];
  size_t n = 0;
  for (void* p : args) params[n++] = p;
  CuCheck(a, a.cuLaunchKernel(ex_.dev_.Function(kernel), gx, gy, 1, block, 1, 1, smem, ex_.stream_, params, nullptr),
          kernel);
}

void DeviceContext::Elementwise(const char* kernel, long long n, std::initializer_list<void*> args) {
  if (n <= 0) return;
  long long blocks = (n + 255) / 256;
  long long cap = static_cast<long long>(ex_.dev_.sms) * 16;
  Launch(kernel, static_cast<unsigned>(std::min(blocks, std::max(cap, 1LL))), 1, 256, 0, args);
}

void DeviceContext::Gemm(cu::CUdeviceptr a, long long lda, cu::CUdeviceptr w, long long ldw, cu::CUdeviceptr bias,
                         cu::CUdeviceptr out, long long ldo, long long M, long long N, long long K, bool accum, int act,
                         float pa, float pb) {
  if (M <= 0 || N <= 0) return;
  if (N > INT_MAX || K > INT_MAX) {
    throw Error{"matrix of " + std::to_string(N) + " x " + std::to_string(K) + " too large"};
  }
  int n = static_cast<int>(N), k = static_cast<int>(K), acc = accum ? 1 : 0;
  // Row chunks keep the grid's y within 65,535 tiles.
  const long long chunk = 65535LL * 64;
  for (long long m0 = 0; m0 < M; m0 += chunk) {
    int m = static_cast<int>(std::min(chunk, M - m0));
    cu::CUdeviceptr ap = a + static_cast<cu::CUdeviceptr>(m0 * lda * sizeof(float));
    cu::CUdeviceptr op = out + static_cast<cu::CUdeviceptr>(m0 * ldo * sizeof(float));
    Launch("onnxrl_gemm", static_cast<unsigned>((N + 63) / 64), static_cast<unsigned>((m + 63) / 64), 256, 0,
           {&ap, &lda, &w, &ldw, &bias, &op, &ldo, &m, &n, &k, &acc, &act, &pa, &pb});
  }
}

// ---- CudaExecutor ----

CudaExecutor::CudaExecutor(Plan plan, CudaDevice& dev) : plan_(std::move(plan)), dev_(dev) {
  const auto& a = dev_.api();
  dev_.MakeCurrent();
  CuCheck(a, a.cuStreamCreate(&stream_, cu::CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CuCheck(a, a.cuStreamCreate(&side_, cu::CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  consts_.assign(plan_.values.size(), 0);
  for (size_t v = 0; v < plan_.values.size(); v++) {
    const Value& val = plan_.values[v];
    if (!val.is_const) continue;
    const bool i64 = val.c.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
    size_t bytes = i64 ? val.c.i.size() * sizeof(int64_t) : val.c.f.size() * sizeof(float);
    Alloc(&consts_[v], std::max<size_t>(bytes, 16), "constant " + val.name);
    if (bytes > 0) {
      const void* src = i64 ? static_cast<const void*>(val.c.i.data()) : static_cast<const void*>(val.c.f.data());
      CuCheck(a, a.cuMemcpyHtoDAsync_v2(consts_[v], src, bytes, stream_), "uploading a constant");
    }
  }
  FindGroups();
}

CudaExecutor::~CudaExecutor() {
  for (auto& s : sigs_) {
    if (s->runs == 0) continue;
    std::string key;
    for (int64_t k : s->run.key) key += (key.empty() ? "" : ",") + std::to_string(k);
    double n = static_cast<double>(s->runs);
    std::fprintf(stderr,
                 "onnxrl cuda profile %s [%s] %s copies (%.1f of %zu tensors pinned), %lld runs, us per run: in %.1f "
                 "kernels %.1f out %.1f\n",
                 plan_.name.c_str(), key.c_str(), s->direct ? "direct" : "staged",
                 static_cast<double>(s->pinned) / n, plan_.inputs.size() + plan_.outputs.size(), s->runs,
                 s->us_in / n, s->us_kernels / n, s->us_out / n);
  }
  const auto& a = dev_.api();
  if (a.cuCtxSetCurrent(dev_.ctx) != cu::CUDA_SUCCESS) return;
  for (auto& s : sigs_) Release(*s);
  for (auto& [k, p] : resident_) a.cuMemFree_v2(p);
  for (cu::CUdeviceptr p : consts_)
    if (p != 0) a.cuMemFree_v2(p);
  if (stream_ != nullptr) a.cuStreamDestroy_v2(stream_);
  if (side_ != nullptr) a.cuStreamDestroy_v2(side_);
}

void CudaExecutor::Alloc(cu::CUdeviceptr* p, size_t bytes, const std::string& what) {
  const auto& a = dev_.api();
  cu::CUresult r = a.cuMemAlloc_v2(p, bytes);
  if (r == cu::CUDA_ERROR_OUT_OF_MEMORY) {
    throw Error{"out of GPU memory on " + dev_.name + " allocating " + std::to_string(bytes) + " bytes for " + what};
  }
  CuCheck(a, r, "cuMemAlloc");
}

void CudaExecutor::Release(Sig& s) {
  const auto& a = dev_.api();
  if (s.graph != nullptr) a.cuGraphExecDestroy(s.graph);
  s.graph = nullptr;
  for (cu::CUdeviceptr p : s.owned) a.cuMemFree_v2(p);
  s.owned.clear();
  for (auto& [k, p] : s.scratch) a.cuMemFree_v2(p.first);
  s.scratch.clear();
  for (cu::CUevent e : s.events)
    if (e != nullptr) a.cuEventDestroy_v2(e);
  s.events.clear();
  for (cu::CUevent e : s.marks)
    if (e != nullptr) a.cuEventDestroy_v2(e);
  s.marks.clear();
  for (void* p : s.pin_in) a.cuMemFreeHost(p);
  for (void* p : s.pin_out) a.cuMemFreeHost(p);
  s.pin_in.clear();
  s.pin_out.clear();
}

void CudaExecutor::FindGroups() {
  groups_ = FindDenseGroups(plan_, devargs::kMaxMlpLayers, devargs::kMaxMlpHeads, kMlpMaxWidth);
  in_group_.assign(plan_.steps.size(), false);
  for (const auto& [first, g] : groups_) {
    for (size_t x : g.trunk) in_group_[x] = true;
    for (size_t x : g.heads) in_group_[x] = true;
  }
  // The launches in order (a group or a step; Copy steps launch nothing and pass their
  // input's buffer on), and for each value the first launch that reads it and the one that
  // writes it, through the Copy steps.
  std::vector<int> root(plan_.values.size());
  for (size_t v = 0; v < root.size(); v++) root[v] = static_cast<int>(v);
  std::vector<int> first_read(plan_.values.size(), INT_MAX), written(plan_.values.size(), -1);
  int launch = -1;
  auto visit = [&](size_t x) {
    for (int v : plan_.steps[x]->in)
      if (v >= 0) first_read[root[v]] = std::min(first_read[root[v]], launch);
    for (int v : plan_.steps[x]->out)
      if (v >= 0) written[v] = launch;
  };
  for (size_t si = 0; si < plan_.steps.size(); si++) {
    const auto& k = plan_.steps[si];
    if (std::string(k->Kind()) == "Copy" && k->in[0] >= 0 && k->out[0] >= 0) {
      root[k->out[0]] = root[k->in[0]];
      written[k->out[0]] = written[root[k->in[0]]];
      continue;
    }
    auto group = groups_.find(si);
    if (group == groups_.end() && in_group_[si]) continue;
    launch++;
    if (group == groups_.end()) {
      visit(si);
      continue;
    }
    for (size_t x : group->second.trunk) visit(x);
    for (size_t x : group->second.heads) visit(x);
  }
  // Overlapping the copies buys something only where a launch can start before an input has
  // landed, or an output can leave before the last launch: the LSTM policy's state against
  // its encoder and heads, not the one fused launch of an MLP (where the fork and join only
  // cost: H200, the MLP at 4,096 took 50-62 us overlapped against 45 in line; the LSTM policy
  // 100-105 against 115).
  overlappable_ = false;
  for (int v : plan_.inputs) overlappable_ = overlappable_ || (first_read[v] != INT_MAX && first_read[v] > 0);
  for (int v : plan_.outputs) overlappable_ = overlappable_ || (written[v] >= 0 && written[v] < launch);
}

CudaExecutor::Sig& CudaExecutor::Resolve(const Inputs& in) {
  for (auto& s : sigs_)
    if (in.Matches(s->run.key)) return *s;
  if (sigs_.size() >= kMaxSigs) {
    Release(*sigs_.front());
    sigs_.erase(sigs_.begin());
  }
  auto s = std::make_unique<Sig>();
  s->run.key = in.Key();
  s->run.shapes.assign(plan_.values.size(), {});
  for (size_t i = 0; i < plan_.inputs.size(); i++)
    s->run.shapes[plan_.inputs[i]].assign(in.dims[i], in.dims[i] + in.ranks[i]);
  InferRun(plan_, s->run);
  const auto& a = dev_.api();
  s->dptr.assign(plan_.values.size(), 0);
  // A Copy step's output shares its input's buffer (values are written once), so the copy is
  // no launch at all (DeviceContext::Copy skips a copy onto itself).
  std::vector<int> alias(plan_.values.size(), -1);
  for (const auto& k : plan_.steps)
    if (std::string(k->Kind()) == "Copy" && k->in[0] >= 0 && k->out[0] >= 0)
      alias[k->out[0]] = alias[k->in[0]] >= 0 ? alias[k->in[0]] : k->in[0];
  try {
    for (size_t v = 0; v < plan_.values.size(); v++) {
      const Value& val = plan_.values[v];
      if (val.is_const) {
        s->dptr[v] = consts_[v];
        continue;
      }
      if (alias[v] >= 0) continue;
      size_t bytes = static_cast<size_t>(NumElements(s->run.shapes[v])) * ElemSize(val.type);
      cu::CUdeviceptr p = 0;
      Alloc(&p, std::max<size_t>(bytes, 16), "value " + val.name);
      s->owned.push_back(p);
      s->dptr[v] = p;
    }
    auto pinned = [&](size_t bytes) {
      void* p = nullptr;
      CuCheck(a, a.cuMemAllocHost_v2(&p, std::max<size_t>(bytes, 16)), "cuMemAllocHost");
      return p;
    };
    for (size_t v = 0; v < plan_.values.size(); v++)
      if (alias[v] >= 0) s->dptr[v] = s->dptr[alias[v]];
    size_t total = 0;
    for (int v : plan_.inputs) {
      s->in_bytes.push_back(static_cast<size_t>(NumElements(s->run.shapes[v])) * ElemSize(plan_.values[v].type));
      total += s->in_bytes.back();
    }
    for (int v : plan_.outputs) {
      s->out_bytes.push_back(static_cast<size_t>(NumElements(s->run.shapes[v])) * ElemSize(plan_.values[v].type));
      total += s->out_bytes.back();
    }
    s->in_pin.assign(plan_.inputs.size(), 0);
    s->out_pin.assign(plan_.outputs.size(), 0);
    s->direct = total >= DirectBytes();
    if (!s->direct) {
      for (size_t b : s->in_bytes) s->pin_in.push_back(pinned(b));
      size_t chunks = 0;
      for (size_t b : s->out_bytes) {
        s->pin_out.push_back(pinned(b));
        chunks += (b + kChunkBytes - 1) / kChunkBytes;
      }
      if (chunks > 1) {
        s->events.assign(chunks, nullptr);
        for (auto& e : s->events) CuCheck(a, a.cuEventCreate(&e, cu::CU_EVENT_DISABLE_TIMING), "cuEventCreate");
      }
    }
  } catch (...) {
    Release(*s);
    throw;
  }
  sigs_.push_back(std::move(s));
  return *sigs_.back();
}

void CudaExecutor::Mlp(Sig& s, const DenseGroup& g) {
  size_t first = g.trunk.empty() ? g.heads[0] : g.trunk[0];
  DeviceContext c(*this, s.run, s.dptr, s.scratch, first, false);
  auto* d0 = static_cast<const DenseKernel*>(plan_.steps[first].get());
  int in = d0->in[0];
  const long long M = MatrixRows(s.run.shapes[in]);
  if (M <= 0) return;
  if (M > INT_MAX) throw Error{"batch of " + std::to_string(M) + " rows too large"};
  devargs::MlpDesc desc{};
  desc.layers = static_cast<int>(g.trunk.size() + g.heads.size());
  desc.heads = static_cast<int>(g.heads.size());
  int width = static_cast<int>(d0->K);
  size_t l = 0;
  for (const auto* list : {&g.trunk, &g.heads}) {
    for (size_t si : *list) {
      auto* d = static_cast<const DenseKernel*>(plan_.steps[si].get());
      desc.k[l] = static_cast<int>(d->K);
      desc.n[l] = static_cast<int>(d->N);
      desc.act[l] = d->act;
      desc.a[l] = d->a;
      desc.b[l] = d->b;
      desc.w[l] = c.Resident(d->w);
      desc.bias[l] = c.Resident(d->bias);
      width = std::max(width, desc.k[l]);
      if (list == &g.trunk) width = std::max(width, desc.n[l]);
      l++;
    }
  }
  for (size_t h = 0; h < g.heads.size(); h++) desc.out[h] = s.dptr[plan_.steps[g.heads[h]]->out[0]];
  desc.width = width;
  // Rows per block: as many as fit, but few enough that every multiprocessor gets a block
  // or two when the batch allows.
  int fit = std::min(64, kMlpSmemBytes / (2 * width * static_cast<int>(sizeof(float)))) / 4 * 4;
  long long spread = (M + 2LL * dev_.sms - 1) / (2LL * dev_.sms);
  int rows = static_cast<int>(std::max(4LL, std::min<long long>(fit, (spread + 3) / 4 * 4)));
  desc.rows = rows;
  int m = static_cast<int>(M);
  cu::CUdeviceptr pin = s.dptr[in];
  unsigned smem = static_cast<unsigned>(2 * rows * width * sizeof(float));
  c.Launch("onnxrl_mlp", static_cast<unsigned>((M + rows - 1) / rows), 1, 256, smem, {&pin, &m, &desc});
}

void CudaExecutor::CopyIn(Sig& s) {
  const auto& a = dev_.api();
  for (size_t i = 0; i < plan_.inputs.size(); i++) {
    cu::CUdeviceptr dst = s.dptr[plan_.inputs[i]];
    if (s.direct || s.in_pin[i]) {
      if (s.in_bytes[i] > 0)
        CuCheck(a, a.cuMemcpyHtoDAsync_v2(dst, in_.data[i], s.in_bytes[i], stream_), "cuMemcpyHtoDAsync");
      continue;
    }
    const auto* src = static_cast<const unsigned char*>(in_.data[i]);
    auto* pin = static_cast<unsigned char*>(s.pin_in[i]);
    for (size_t off = 0; off < s.in_bytes[i]; off += kChunkBytes) {
      size_t n = std::min(kChunkBytes, s.in_bytes[i] - off);
      std::memcpy(pin + off, src + off, n);
      CuCheck(a, a.cuMemcpyHtoDAsync_v2(dst + off, pin + off, n, stream_), "cuMemcpyHtoDAsync");
    }
  }
}

void CudaExecutor::CopyOut(Sig& s) {
  const auto& a = dev_.api();
  size_t ev = 0;
  for (size_t i = 0; i < plan_.outputs.size(); i++) {
    const Value& val = plan_.values[plan_.outputs[i]];
    if (val.input >= 0 || val.is_const || s.out_bytes[i] == 0) continue;
    cu::CUdeviceptr src = s.dptr[plan_.outputs[i]];
    if (s.direct || s.out_pin[i]) {
      CuCheck(a, a.cuMemcpyDtoHAsync_v2(out_data_[i], src, s.out_bytes[i], stream_), "cuMemcpyDtoHAsync");
      continue;
    }
    auto* pin = static_cast<unsigned char*>(s.pin_out[i]);
    for (size_t off = 0; off < s.out_bytes[i]; off += kChunkBytes) {
      size_t n = std::min(kChunkBytes, s.out_bytes[i] - off);
      CuCheck(a, a.cuMemcpyDtoHAsync_v2(pin + off, src + off, n, stream_), "cuMemcpyDtoHAsync");
      if (!s.events.empty()) CuCheck(a, a.cuEventRecord(s.events.at(ev++), stream_), "cuEventRecord");
    }
  }
}

void CudaExecutor::Unstage(Sig& s) {
  const auto& a = dev_.api();
  const bool chunked = !s.direct && !s.events.empty();
  if (!chunked) {
    CuCheck(a, a.cuStreamSynchronize(stream_), "running the kernels (cuStreamSynchronize)");
    if (s.direct) return;
  }
  size_t ev = 0;
  bool straight = false;
  for (size_t i = 0; i < plan_.outputs.size(); i++) {
    const Value& val = plan_.values[plan_.outputs[i]];
    if (val.input >= 0 || val.is_const || s.out_bytes[i] == 0) continue;
    if (s.out_pin[i]) {
      straight = true;
      continue;
    }
    const auto* pin = static_cast<const unsigned char*>(s.pin_out[i]);
    auto* dst = static_cast<unsigned char*>(out_data_[i]);
    for (size_t off = 0; off < s.out_bytes[i]; off += kChunkBytes) {
      size_t n = std::min(kChunkBytes, s.out_bytes[i] - off);
      if (!s.events.empty())
        CuCheck(a, a.cuEventSynchronize(s.events.at(ev++)), "running the kernels (cuEventSynchronize)");
      std::memcpy(dst + off, pin + off, n);
    }
  }
  // The straight copies into pinned outputs may still be on their way after the last event.
  if (chunked && straight)
    CuCheck(a, a.cuStreamSynchronize(stream_), "running the kernels (cuStreamSynchronize)");
}

// Profile runs a signature eagerly with a synchronization after each phase and adds the
// phases' times to the signature's profile (printed when the executor is released).
void CudaExecutor::Profile(Sig& s) {
  const auto& a = dev_.api();
  auto sync = [&] { CuCheck(a, a.cuStreamSynchronize(stream_), "cuStreamSynchronize"); };
  auto t0 = std::chrono::steady_clock::now();
  CopyIn(s);
  sync();
  auto t1 = std::chrono::steady_clock::now();
  RecordKernels(s, false);
  sync();
  auto t2 = std::chrono::steady_clock::now();
  CopyOut(s);
  sync();
  Unstage(s);
  auto t3 = std::chrono::steady_clock::now();
  s.runs++;
  s.us_in += Micros(t0, t1);
  s.us_kernels += Micros(t1, t2);
  s.us_out += Micros(t2, t3);
}

bool CudaExecutor::AllPinned(const Sig& s) const {
  for (size_t i = 0; i < plan_.inputs.size(); i++)
    if (s.in_bytes[i] > 0 && !s.in_pin[i]) return false;
  for (size_t i = 0; i < plan_.outputs.size(); i++) {
    const Value& val = plan_.values[plan_.outputs[i]];
    if (val.input < 0 && !val.is_const && s.out_bytes[i] > 0 && !s.out_pin[i]) return false;
  }
  return true;
}

bool CudaExecutor::SameIo(const Sig& s) const {
  if (!AllPinned(s) || s.io.size() != plan_.inputs.size() + plan_.outputs.size()) return false;
  for (size_t i = 0; i < plan_.inputs.size(); i++)
    if (s.io[i] != in_.data[i]) return false;
  for (size_t i = 0; i < plan_.outputs.size(); i++)
    if (s.io[plan_.inputs.size() + i] != out_data_[i]) return false;
  return true;
}

// Capture records the signature's launches (and, with_copies, its copies to and from the
// pinned buffers of this run) into the CUDA graph that its next runs replay.
void CudaExecutor::Capture(Sig& s, bool with_copies) {
  const auto& a = dev_.api();
  CuCheck(a, a.cuStreamBeginCapture_v2(stream_, cu::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
  cu::CUgraph g = nullptr;
  try {
    if (with_copies && Overlap() && overlappable_) {
      CaptureOverlapped(s);
    } else {
      if (with_copies) CopyIn(s);
      RecordKernels(s, true);
      if (with_copies) CopyOut(s);
    }
  } catch (...) {
    a.cuStreamEndCapture(stream_, &g);
    if (g != nullptr) a.cuGraphDestroy(g);
    throw;
  }
  CuCheck(a, a.cuStreamEndCapture(stream_, &g), "cuStreamEndCapture");
  cu::CUresult r = a.cuGraphInstantiateWithFlags(&s.graph, g, 0);
  a.cuGraphDestroy(g);
  CuCheck(a, r, "cuGraphInstantiate");
  s.graph_copies = with_copies;
  s.io.clear();
  if (with_copies) {
    s.io.assign(in_.data.begin(), in_.data.begin() + plan_.inputs.size());
    s.io.insert(s.io.end(), out_data_.begin(), out_data_.end());
  }
}

void CudaExecutor::RecordKernels(Sig& s, bool capturing, const StepHooks* hooks) {
  // each calls f for every value the steps in list read (or write).
  auto each = [&](const std::vector<size_t>& list, bool outs, const std::function<void(int)>& f) {
    for (size_t x : list)
      for (int v : outs ? plan_.steps[x]->out : plan_.steps[x]->in)
        if (v >= 0) f(v);
  };
  for (size_t si = 0; si < plan_.steps.size(); si++) {
    auto group = groups_.find(si);
    if (group != groups_.end()) {
      const DenseGroup& g = group->second;
      if (hooks != nullptr) {
        each(g.trunk, false, hooks->before);
        each(g.heads, false, hooks->before);
      }
      Mlp(s, g);
      if (hooks != nullptr) {
        each(g.trunk, true, hooks->after);
        each(g.heads, true, hooks->after);
      }
      continue;
    }
    if (in_group_[si]) continue;
    if (hooks != nullptr) each({si}, false, hooks->before);
    DeviceContext c(*this, s.run, s.dptr, s.scratch, si, capturing);
    try {
      plan_.steps[si]->Device(c);
    } catch (Error& e) {
      throw Error{"node " + plan_.steps[si]->node + ": " + e.msg};
    }
    if (hooks != nullptr) each({si}, true, hooks->after);
  }
}

void CudaExecutor::CaptureOverlapped(Sig& s) {
  const auto& a = dev_.api();
  const size_t nin = plan_.inputs.size(), nout = plan_.outputs.size();
  if (s.marks.empty()) {
    s.marks.assign(2 + nin + nout, nullptr);
    for (auto& e : s.marks) CuCheck(a, a.cuEventCreate(&e, cu::CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  }
  cu::CUevent fork = s.marks[0], join = s.marks[1];
  const cu::CUevent* in_ready = s.marks.data() + 2;
  const cu::CUevent* out_ready = s.marks.data() + 2 + nin;
  CuCheck(a, a.cuEventRecord(fork, stream_), "cuEventRecord");
  CuCheck(a, a.cuStreamWaitEvent(side_, fork, 0), "cuStreamWaitEvent");
  std::vector<int> input_of(plan_.values.size(), -1);
  for (size_t i = 0; i < nin; i++) {
    input_of[plan_.inputs[i]] = static_cast<int>(i);
    if (s.in_bytes[i] == 0) continue;
    CuCheck(a, a.cuMemcpyHtoDAsync_v2(s.dptr[plan_.inputs[i]], in_.data[i], s.in_bytes[i], side_), "cuMemcpyHtoDAsync");
    CuCheck(a, a.cuEventRecord(in_ready[i], side_), "cuEventRecord");
  }
  std::vector<char> waited(nin, 0), copied(nout, 0);
  auto copy_out = [&](size_t o) {
    const Value& val = plan_.values[plan_.outputs[o]];
    if (copied[o] || val.input >= 0 || val.is_const || s.out_bytes[o] == 0) return;
    copied[o] = 1;
    CuCheck(a, a.cuEventRecord(out_ready[o], stream_), "cuEventRecord");
    CuCheck(a, a.cuStreamWaitEvent(side_, out_ready[o], 0), "cuStreamWaitEvent");
    CuCheck(a, a.cuMemcpyDtoHAsync_v2(out_data_[o], s.dptr[plan_.outputs[o]], s.out_bytes[o], side_),
            "cuMemcpyDtoHAsync");
  };
  StepHooks hooks;
  hooks.before = [&](int v) {
    const int i = input_of[v];
    if (i < 0 || waited[i] || s.in_bytes[i] == 0) return;
    waited[i] = 1;
    CuCheck(a, a.cuStreamWaitEvent(stream_, in_ready[i], 0), "cuStreamWaitEvent");
  };
  hooks.after = [&](int v) {
    for (size_t o = 0; o < nout; o++)
      if (plan_.outputs[o] == v) copy_out(o);
  };
  RecordKernels(s, true, &hooks);
  for (size_t o = 0; o < nout; o++) copy_out(o);  // outputs no step writes (aliases of inputs)
  CuCheck(a, a.cuEventRecord(join, side_), "cuEventRecord");
  CuCheck(a, a.cuStreamWaitEvent(stream_, join, 0), "cuStreamWaitEvent");
}

OrtStatus* CudaExecutor::Compute(OrtKernelContext* ctx) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    const auto& a = dev_.api();
    dev_.MakeCurrent();
    in_.Read(ctx, plan_);
    Sig& s = Resolve(in_);
    out_data_.resize(plan_.outputs.size());
    for (size_t i = 0; i < plan_.outputs.size(); i++) {
      const auto& shape = s.run.shapes[plan_.outputs[i]];
      OrtValue* out = nullptr;
      Check(g_ort->KernelContext_GetOutput(ctx, i, shape.data(), shape.size(), &out), "KernelContext_GetOutput");
      Check(g_ort->GetTensorMutableData(out, &out_data_[i]), "GetTensorMutableData");
    }
    for (size_t i = 0; i < plan_.inputs.size(); i++) {
      s.in_pin[i] = IsPinned(in_.data[i], s.in_bytes[i]);
      s.pinned += s.in_pin[i];
    }
    for (size_t i = 0; i < plan_.outputs.size(); i++) {
      s.out_pin[i] = IsPinned(out_data_[i], s.out_bytes[i]);
      s.pinned += s.out_pin[i];
    }
    if (s.graph != nullptr && s.graph_copies && !SameIo(s)) {
      // Captured with other buffers' copies: run eagerly and capture again.
      a.cuGraphExecDestroy(s.graph);
      s.graph = nullptr;
    }
    const bool replay = s.graph != nullptr;
    if (Profiling()) {
      Profile(s);
    } else if (replay && s.graph_copies) {
      CuCheck(a, a.cuGraphLaunch(s.graph, stream_), "cuGraphLaunch");
      CuCheck(a, a.cuStreamSynchronize(stream_), "running the kernels (cuStreamSynchronize)");
    } else {
      // Copies that are not all pinned stay outside the graph. On an H200, with the staged
      // copies captured too, the MLP at batch 4096 took 63 us against 49-52 without a graph;
      // outside, 60 against 65.
      CopyIn(s);
      if (replay) {
        CuCheck(a, a.cuGraphLaunch(s.graph, stream_), "cuGraphLaunch");
      } else {
        RecordKernels(s, false);
      }
      CopyOut(s);
      Unstage(s);
    }
    // Outputs that are inputs or constants are copied on the host.
    for (size_t i = 0; i < plan_.outputs.size(); i++) {
      const Value& val = plan_.values[plan_.outputs[i]];
      if (s.out_bytes[i] == 0 || (val.input < 0 && !val.is_const)) continue;
      const void* src = val.input >= 0 ? in_.data[val.input]
                        : val.c.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 ? static_cast<const void*>(val.c.i.data())
                                                                            : static_cast<const void*>(val.c.f.data());
      std::memcpy(out_data_[i], src, s.out_bytes[i]);
    }
    if (!replay && UseGraphs() && !Profiling()) Capture(s, GraphCopies() && AllPinned(s));
    return nullptr;
  } catch (Error& e) {
    return Fail(plan_.name + " (cuda:" + std::to_string(dev_.id) + "): " + e.msg);
  } catch (std::exception& e) {
    return Fail(plan_.name + " (cuda:" + std::to_string(dev_.id) + "): " + e.what());
  } catch (...) {
    return Fail(plan_.name + ": unknown failure");
  }
}

}  // namespace onnxrl_ep
