// openblas_gemm compares the host backend's matrix multiply (ep/src/gemm.h: packed weights,
// bias and ReLU applied in registers) with OpenBLAS's sgemm followed by a bias-and-ReLU pass, one
// thread each, on policy-shaped layers, and prints the table ep/README.md keeps ("Why its own
// kernels"). Not built by make; with Debian's libopenblas-dev:
//
//   g++ -O3 -std=gnu++17 -Wno-psabi -Iep/src ep/bench/openblas_gemm.cc
//       ep/src/gemm.cc ep/src/simd.cc -lopenblas -o /tmp/openblas_gemm && /tmp/openblas_gemm
#include "gemm.h"
#include <cblas.h>
#include <cstdio>
#include <vector>
#include <random>
#include <chrono>
extern "C" void openblas_set_num_threads(int);
using namespace onnxrl_ep;
int main() {
  openblas_set_num_threads(1);
  std::mt19937 rng(1); std::uniform_real_distribution<float> u(-1,1);
  struct S { int64_t M, K, N; } shapes[] = {{256,64,64},{4096,64,64},{256,256,256},{4096,256,256},{256,128,512},{32,64,64},{32,256,256}};
  printf("| M x K x N | ours (packed, bias+ReLU in registers) us | OpenBLAS sgemm + bias/ReLU pass us | ours/OpenBLAS throughput |\n|---|---|---|---|\n");
  for (auto s : shapes) {
    std::vector<float> a(s.M*s.K), w(s.K*s.N), b(s.N), c1(s.M*s.N), c2(s.M*s.N);
    for (auto& v : a) v = u(rng);
    for (auto& v : w) v = u(rng);
    for (auto& v : b) v = u(rng);
    auto pw = PackedWeights::Pack(w.data(), s.K, s.N, s.N, b.data());
    Epilogue e; e.act = 1;
    int it = (int)(2e9 / (s.M*s.K*s.N)) + 1;
    double best1 = 1e9, best2 = 1e9;
    for (int rep = 0; rep < 5; rep++) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < it; i++) Gemm(a.data(), s.K, s.M, pw, 0, s.N, e, c1.data(), s.N);
      auto t1 = std::chrono::steady_clock::now();
      for (int i = 0; i < it; i++) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.M, s.N, s.K, 1.0f, a.data(), s.K, w.data(), s.N, 0.0f, c2.data(), s.N);
        for (int64_t m = 0; m < s.M; m++) for (int64_t n = 0; n < s.N; n++) { float v = c2[m*s.N+n] + b[n]; c2[m*s.N+n] = v > 0 ? v : 0; }
      }
      auto t2 = std::chrono::steady_clock::now();
      best1 = std::min(best1, std::chrono::duration<double>(t1-t0).count()/it);
      best2 = std::min(best2, std::chrono::duration<double>(t2-t1).count()/it);
    }
    double md = 0; for (size_t i = 0; i < c1.size(); i++) md = std::max(md, (double)std::abs(c1[i]-c2[i]));
    printf("| %ld x %ld x %ld | %.1f | %.1f | %.2f |%s\n", s.M, s.K, s.N, best1*1e6, best2*1e6, best2/best1, md > 1e-3 ? " MISMATCH" : "");
  }
}
