// Compiles the CUDA backend's kernels with NVRTC, which needs no GPU: a CUBIN for sm_80 and
// sm_90 and PTX for the newest architecture the NVRTC found knows, each with ptxas' report of
// registers and spills per kernel (printed). Fails when a kernel does not compile, or spills
// at the tile sizes chosen. Exit 77 (skipped) when no NVRTC is found: `make test` installs the
// nvidia-cuda-nvrtc wheel into the build folder and points ONNXRL_NVRTC_LIBRARY at it.
#include <cstdio>
#include <regex>
#include <set>
#include <string>

#include "cuda/compiler.h"
#include "ort.h"

using namespace onnxrl_ep;

int main() {
  const Nvrtc* nvrtc = nullptr;
  try {
    nvrtc = &LoadNvrtc(0);
  } catch (Error& e) {
    std::printf("skip: %s\n", e.msg.c_str());
    return 77;
  }
  std::printf("NVRTC %d.%d from %s; architectures:", nvrtc->major, nvrtc->minor, nvrtc->path.c_str());
  int newest = 0;
  for (int a : nvrtc->archs) {
    std::printf(" %d", a);
    if (a > newest) newest = a;
  }
  std::printf("\n");
  int failures = 0;
  std::set<std::string> kernels_seen;
  for (std::string target : {std::string("sm_80"), std::string("sm_90"), "compute_" + std::to_string(newest)}) {
    Image img;
    try {
      img = CompileSource(*nvrtc, DeviceSource(), target, true);
    } catch (Error& e) {
      std::printf("FAIL %s: %s\n", target.c_str(), e.msg.c_str());
      failures++;
      continue;
    }
    std::printf("ok   %s: %zu bytes of %s\n", target.c_str(), img.data.size(), img.ptx ? "PTX" : "CUBIN");
    // ptxas reports, per entry function: "Compiling entry function 'X' for 'sm_90'", then
    // "N bytes stack frame, S bytes spill stores, L bytes spill loads" and "Used R registers".
    std::regex entry("Compiling entry function '([A-Za-z0-9_]+)'");
    std::regex spill("([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads");
    std::regex regs("Used ([0-9]+) registers");
    std::string current;
    size_t pos = 0;
    std::string log = img.log;
    while (pos < log.size()) {
      size_t nl = log.find('\n', pos);
      std::string line = log.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
      pos = nl == std::string::npos ? log.size() : nl + 1;
      std::smatch m;
      if (std::regex_search(line, m, entry)) {
        current = m[1];
        kernels_seen.insert(current);
      } else if (std::regex_search(line, m, spill)) {
        if (m[1] != "0" || m[2] != "0") {
          std::printf("FAIL %s: %s spills (%s)\n", target.c_str(), current.c_str(), line.c_str());
          failures++;
        }
      } else if (std::regex_search(line, m, regs)) {
        std::printf("     %s %-18s %s registers\n", target.c_str(), current.c_str(), m[1].str().c_str());
      }
    }
  }
  // Every kernel the backend launches is in the module.
  for (const char* k : {"onnxrl_unary", "onnxrl_binary", "onnxrl_strided", "onnxrl_copy2d", "onnxrl_fill",
                        "onnxrl_softmax", "onnxrl_gemm", "onnxrl_mlp", "onnxrl_lstm_cell", "onnxrl_lstm_step",
                        "onnxrl_gru_lbr",
                        "onnxrl_gru_reset", "onnxrl_gru_out", "onnxrl_conv", "onnxrl_pool", "onnxrl_layernorm",
                        "onnxrl_reduce_mean", "onnxrl_pad"}) {
    if (!kernels_seen.count(k)) {
      std::printf("FAIL kernel %s missing from ptxas' report\n", k);
      failures++;
    }
  }
  std::printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
