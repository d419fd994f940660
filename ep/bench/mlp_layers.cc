// mlp_layers times the host backend's matrix multiply (ep/src/gemm.h) on the layers of the narrow
// MLP policy of benchmarks/epbench (8 -> 64 -> 64, Tanh, then the logits and value heads merged
// into one 5-column matrix, as HostDenseGroup runs them: ep/src/host_group.cc), one thread, in
// tiles of rows as the group runs them, each layer with and without its activation, and the
// Tanh alone over as many values as the two layers ("tanh alone", Activations); the best of 7
// runs of 2,000, in µs. The figures in the commit messages of the narrow MLP's changes come
// from it. Not built by make:
//
//   g++ -O3 -std=gnu++17 -Wno-psabi -Iep/src ep/bench/mlp_layers.cc ep/src/gemm.cc ep/src/simd.cc
//       -o /tmp/mlp_layers && /tmp/mlp_layers [rows (256)] [rows per tile (128)]
//
// ONLY=<name> (one of the printed names) runs that one alone, 300 times as long (for perf).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gemm.h"
#include "kernels.h"
#include "random_floats.h"

using namespace onnxrl_ep;

int main(int argc, char** argv) {
  const int64_t M = argc > 1 ? std::atoll(argv[1]) : 256;
  const int64_t tile = argc > 2 ? std::max<long long>(1, std::atoll(argv[2])) : 128;
  onnxrl_ep_bench::RandomFloats random(0.5f);
  const auto x = random(M * 8), w1 = random(8 * 64), b1 = random(64), w2 = random(64 * 64), b2 = random(64),
             wh = random(64 * 5), bh = random(5);
  const PackedWeights p1 = PackedWeights::Pack(w1.data(), 8, 64, 64, b1.data());
  const PackedWeights p2 = PackedWeights::Pack(w2.data(), 64, 64, 64, b2.data());
  const PackedWeights ph = PackedWeights::Pack(wh.data(), 64, 5, 5, bh.data());
  // The tile buffers from 64-byte boundaries, as the group's (host_group.cc).
  std::vector<float> scratch(tile * (2 * 64 + 8) + 16), logits(M * 4), value(M);
  float* const h1 = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t{63});
  float* const h2 = h1 + tile * 64;
  float* const hb = h2 + tile * 64;
  Epilogue tanh, none;
  tanh.act = kActTanh;
  const char* only = std::getenv("ONLY");
  auto time = [&](const char* name, auto&& f) {
    if (only != nullptr && std::strcmp(only, name) != 0) return;
    double best = 1e30;
    for (int rep = 0; rep < (only != nullptr ? 300 : 7); rep++) {
      const int iters = 2000;
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; i++) f();
      auto t1 = std::chrono::steady_clock::now();
      best = std::min(best, std::chrono::duration<double, std::micro>(t1 - t0).count() / iters);
    }
    std::printf("%-16s %8.2f µs\n", name, best);
  };
  // The group's tiles (HostDenseGroup::Tiles): the layers chosen, with or without Tanh.
  auto run = [&](bool l1, bool l2, bool heads, bool act) {
    for (int64_t mt = 0; mt < M; mt += tile) {
      const int64_t n = std::min(tile, M - mt);
      if (l1) Gemm(x.data() + mt * 8, 8, n, p1, 0, 64, act ? tanh : none, h1, 64);
      if (l2) Gemm(h1, 64, n, p2, 0, 64, act ? tanh : none, h2, 64);
      if (heads) {
        Gemm(h2, 64, n, ph, 0, 8, none, hb, 8);  // rows padded to 8, as the group's
        for (int64_t r = 0; r < n; r++) {
          for (int j = 0; j < 4; j++) logits[(mt + r) * 4 + j] = hb[r * 8 + j];
          value[mt + r] = hb[r * 8 + 4];
        }
      }
    }
  };
  time("whole", [&] { run(true, true, true, true); });
  time("whole no act", [&] { run(true, true, true, false); });
  time("layer1 tanh", [&] { run(true, false, false, true); });
  time("layer1 none", [&] { run(true, false, false, false); });
  time("layer2 tanh", [&] { run(false, true, false, true); });
  time("layer2 none", [&] { run(false, true, false, false); });
  time("heads", [&] { run(false, false, true, false); });
  std::vector<float> t(M * 128);
  time("tanh alone", [&] { Activations(tanh, t.data(), t.data(), M * 128); });
  std::printf("%.0f multiply-adds per run (heads of 5 columns)\n", double(M) * (8 * 64 + 64 * 64 + 64 * 5));
}
