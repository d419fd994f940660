// lstm_step times the host backend's LSTM step (ep/src/host.h, HostLstm: the gates' multiply
// over [x_t, h] and the cells; on AVX-512 LstmStrassen, its one-level Strassen form with the
// cells fused in) alone on the LSTM of benchmarks/epbench's lstm_128 policy (128 inputs, 128
// hidden units, one step), one thread, the weights packed once as the kernel packs them, the
// state read from h0/c0 and written to Y_h/Y_c; and the ordinary path's cells alone
// (LstmCells). Prints the best
// of 7 runs' µs per step. The figures in the commit messages of the LSTM's changes come from it.
// Not built by make:
//
//   g++ -O3 -std=gnu++17 -Wno-psabi -Iep/src ep/bench/lstm_step.cc ep/src/host.cc ep/src/gemm.cc
//       ep/src/simd.cc ep/src/cells.cc ep/src/lstm_strassen.cc -o /tmp/lstm_step && /tmp/lstm_step [rows (256)]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "host.h"
#include "random_floats.h"

using namespace onnxrl_ep;

int main(int argc, char** argv) {
  const int64_t B = argc > 1 ? std::atoll(argv[1]) : 256, I = 128, H = 128, G = 4 * H;
  onnxrl_ep_bench::RandomFloats random(0.3f);
  const auto wx = random(I * G), wh = random(H * G), bx = random(G), bh = random(G);
  const auto x = random(B * I), h0 = random(B * H), c0 = random(B * H);
  std::vector<float> yh(B * H), yc(B * H), scratch(RnnScratch(4, I, H, B));
  RnnWeights w{I, H, wx.data(), wh.data(), bx.data(), bh.data()};
  PackedWeights px, ph, phn;
  RnnPack(w, true, false, &px, &ph, &phn);
  w.x = &px;
  w.h = &ph;
  w.hn = &phn;
  auto time = [&](const char* name, auto&& f) {
    double best = 1e30;
    for (int rep = 0; rep < 7; rep++) {
      const int iters = std::max<int>(20, 200000 / B);
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; i++) f();
      auto t1 = std::chrono::steady_clock::now();
      best = std::min(best, std::chrono::duration<double, std::micro>(t1 - t0).count() / iters);
    }
    std::printf("%-8s %9.2f µs\n", name, best);
  };
  time("step", [&] {
    HostLstm(w, x.data(), 1, B, h0.data(), c0.data(), nullptr, yh.data(), yc.data(), scratch.data());
  });
  const auto gates = random(B * G);
  time("cells", [&] { LstmCells(gates.data(), B, H, c0.data(), yc.data(), yh.data(), nullptr); });
}
