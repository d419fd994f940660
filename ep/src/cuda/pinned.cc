#include "pinned.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "../plan.h"
#include "cuda_exec.h"

namespace onnxrl_ep {

namespace {

struct Range {
  size_t bytes;
  int device;
};

struct Registry {
  std::mutex mu;
  std::map<uintptr_t, Range> ranges;  // by start address; never overlapping
};

Registry& Pins() {
  static Registry* r = new Registry;  // kept for the process: executors may ask at exit
  return *r;
}

bool PinningOn() {
  static const bool on = [] {
    const char* v = std::getenv("ONNXRL_CUDA_PIN");
    return v == nullptr || std::string(v) != "0";
  }();
  return on;
}

void Say(char* msg, size_t n, const std::string& s) {
  if (msg == nullptr || n == 0) return;
  std::snprintf(msg, n, "%s", s.c_str());
}

// Guarded runs f, the body of an exported call, and turns what it throws into -1 and the
// message: nothing thrown crosses into the caller.
template <typename F>
int Guarded(char* msg, size_t n, const char* what, F&& f) noexcept {
  try {
    return f();
  } catch (Error& e) {
    Say(msg, n, e.msg);
  } catch (std::exception& e) {
    Say(msg, n, e.what());
  } catch (...) {
    Say(msg, n, std::string(what) + ": unknown failure");
  }
  return -1;
}

std::string Hex(uintptr_t p) {
  char b[32];
  std::snprintf(b, sizeof b, "%#llx", static_cast<unsigned long long>(p));
  return b;
}

}  // namespace

bool IsPinned(const void* p, size_t bytes) {
  if (p == nullptr) return false;
  const auto a = reinterpret_cast<uintptr_t>(p);
  Registry& r = Pins();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.ranges.upper_bound(a);
  if (it == r.ranges.begin()) return false;
  --it;
  return a - it->first <= it->second.bytes && bytes <= it->second.bytes - (a - it->first);
}

}  // namespace onnxrl_ep

using onnxrl_ep::Pins;
using onnxrl_ep::Range;
using onnxrl_ep::Registry;

extern "C" int OnnxrlEpPinHost(int device_id, void* p, size_t bytes, char* msg, size_t msg_len) noexcept {
  return onnxrl_ep::Guarded(msg, msg_len, "pinning host memory", [&] {
    if (!onnxrl_ep::PinningOn()) {
      onnxrl_ep::Say(msg, msg_len, "pinning is turned off (ONNXRL_CUDA_PIN=0)");
      return 1;
    }
    if (p == nullptr || bytes == 0) {
      onnxrl_ep::Say(msg, msg_len, "pinning host memory: no range given");
      return -1;
    }
    onnxrl_ep::CudaDevice& dev = onnxrl_ep::OpenCudaDevice(device_id);
    const auto start = reinterpret_cast<uintptr_t>(p);
    Registry& r = Pins();
    std::lock_guard<std::mutex> lock(r.mu);
    auto next = r.ranges.lower_bound(start);
    bool overlap = next != r.ranges.end() && next->first < start + bytes;
    if (!overlap && next != r.ranges.begin()) {
      auto prev = std::prev(next);
      overlap = prev->first + prev->second.bytes > start;
    }
    if (overlap) {
      onnxrl_ep::Say(msg, msg_len,
                     "pinning " + std::to_string(bytes) + " bytes at " + onnxrl_ep::Hex(start) +
                         ": the range overlaps one already pinned");
      return -1;
    }
    dev.MakeCurrent();
    const auto& a = dev.api();
    onnxrl_ep::CuCheck(a, a.cuMemHostRegister_v2(p, bytes, onnxrl_ep::cu::kMemHostRegisterPortable),
                       ("pinning " + std::to_string(bytes) + " bytes of host memory (cuMemHostRegister)").c_str());
    r.ranges[start] = Range{bytes, device_id};
    return 0;
  });
}

extern "C" int OnnxrlEpUnpinHost(void* p, char* msg, size_t msg_len) noexcept {
  return onnxrl_ep::Guarded(msg, msg_len, "unpinning host memory", [&] {
    Registry& r = Pins();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.ranges.find(reinterpret_cast<uintptr_t>(p));
    if (it == r.ranges.end()) {
      onnxrl_ep::Say(msg, msg_len,
                     "unpinning " + onnxrl_ep::Hex(reinterpret_cast<uintptr_t>(p)) + ": not the start of a pinned range");
      return -1;
    }
    onnxrl_ep::CudaDevice& dev = onnxrl_ep::OpenCudaDevice(it->second.device);
    r.ranges.erase(it);  // no executor copies through it from here on
    dev.MakeCurrent();
    const auto& a = dev.api();
    onnxrl_ep::CuCheck(a, a.cuMemHostUnregister(p), "unpinning host memory (cuMemHostUnregister)");
    return 0;
  });
}
