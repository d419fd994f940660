// conv_gather times the host backend's convolution multiply (ep/src/gemm.h, GemmGatherT: each
// output position's window read in place, bias and ReLU in registers, stored NCHW) alone on the
// three layers of a Nature CNN (4x84x84 -> 32 8x8/4 -> 64 4x4/2 -> 64 3x3/1), one thread, in
// tasks of a given number of positions as ConvKernel::Host hands them out (ops/conv.cc), and
// prints each layer's microseconds and billions of multiply-adds per second (the best of 5).
// The figures in the commit messages of the convolution's changes come from it. Not built by
// make:
//
//   g++ -O3 -std=gnu++17 -Wno-psabi -Iep/src ep/bench/conv_gather.cc ep/src/gemm.cc ep/src/simd.cc
//       -o /tmp/conv_gather && /tmp/conv_gather [images (32)] [positions per task (all)]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "gemm.h"
#include "kernels.h"
#include "nature_cnn.h"

using namespace onnxrl_ep;

using onnxrl_ep_bench::Layer;

int main(int argc, char** argv) {
  const int64_t images = argc > 1 ? std::atoll(argv[1]) : 32;
  const auto& layers = onnxrl_ep_bench::kNatureCnn;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const Layer& l : layers) {
    const int64_t OH = (l.H - l.k) / l.s + 1, OW = (l.W - l.k) / l.s + 1, K = l.C * l.k * l.k;
    std::vector<float> x(images * l.C * l.H * l.W), w(K * l.OC), bias(l.OC), y(images * l.OC * OH * OW);
    for (float& v : x) v = u(rng);
    for (float& v : w) v = u(rng);
    for (float& v : bias) v = u(rng);
    const PackedWeights pw = PackedWeights::Pack(w.data(), K, l.OC, l.OC, bias.data());
    // Where each (channel, kernel row, kernel column) of a window is, from its first input.
    std::vector<int64_t> off(K);
    for (int64_t c = 0, k = 0; c < l.C; c++)
      for (int64_t a = 0; a < l.k; a++)
        for (int64_t b = 0; b < l.k; b++, k++) off[k] = (c * l.H + a) * l.W + b;
    const int64_t M = images * OH * OW;
    std::vector<const float*> rows(M);
    std::vector<float*> outs(M);
    for (int64_t n = 0; n < images; n++)
      for (int64_t p = 0; p < OH * OW; p++) {
        rows[n * OH * OW + p] = x.data() + n * l.C * l.H * l.W + (p / OW) * l.s * l.W + (p % OW) * l.s;
        outs[n * OH * OW + p] = y.data() + n * l.OC * OH * OW + p;
      }
    const int64_t task = argc > 2 ? std::max<long long>(1, std::atoll(argv[2])) : M;
    Epilogue relu;
    relu.act = kActRelu;
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t q = 0; q < M; q += task)
        GemmGatherT(rows.data() + q, off.data(), std::min(task, M - q), pw, relu, outs.data() + q, OH * OW);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("conv %lldx%lldx%lld -> %lld %lldx%lld/%lld, %lld positions x K %lld: %.0f us, %.1f billion multiply-adds/s\n",
                (long long)l.C, (long long)l.H, (long long)l.W, (long long)l.OC, (long long)l.k, (long long)l.k,
                (long long)l.s, (long long)M, (long long)K, best * 1e6, double(M) * K * l.OC / best / 1e9);
  }
  return 0;
}
