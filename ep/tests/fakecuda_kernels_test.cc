// The CUDA backend's kernels (src/cuda/device.cuh) compiled as host C++ and run by the fake
// driver's block emulator (tests/fakecuda), against the host backend (host.h) or plain
// reference loops, at sizes on and off the tiles' edges. First the emulator itself: barriers,
// shared memory and thread coordinates.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "cuda/compiler.h"
#include "cuda/device_args.h"
#include "fakecuda/blocks.h"
#include "fakecuda/kernel_table.h"
#include "host.h"

// The emulator's coordinates of the running thread (fakecuda/blocks.cc).
extern onnxrl_fakecuda::Dim3 threadIdx, blockIdx, blockDim, gridDim;

using namespace onnxrl_ep;
using onnxrl_fakecuda::Dim3;

namespace {

int failures = 0;

void Fail(const std::string& what) {
  std::printf("FAIL %s\n", what.c_str());
  failures++;
}

// Buf is 64-byte aligned floats (the kernels' float4 loads need 16), NaN-filled past size so
// that a read or a write out of range shows.
struct Buf {
  explicit Buf(size_t n, size_t pad = 16) : n(n), total(n + pad) {
    p = static_cast<float*>(std::aligned_alloc(64, (total * sizeof(float) + 63) / 64 * 64));
    for (size_t i = 0; i < total; i++) p[i] = std::nanf("");
  }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  ~Buf() { std::free(p); }
  float* data() const { return p; }
  float& operator[](size_t i) const { return p[i]; }
  // Tail reports whether the padding past n is untouched.
  bool Tail() const {
    for (size_t i = n; i < total; i++)
      if (!std::isnan(p[i])) return false;
    return true;
  }
  size_t n, total;
  float* p;
};

std::mt19937 rng(7);

void Fill(const Buf& b, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  for (size_t i = 0; i < b.n; i++) b[i] = d(rng);
}

cu::CUdeviceptr Dev(const float* p) { return static_cast<cu::CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

// Compare checks got against want to 1e-5 of the larger of 1 and want's largest magnitude (as
// the Go tests compare providers); reports the first mismatches.
void Compare(const std::string& what, const float* got, const float* want, size_t n) {
  double scale = 1.0;
  for (size_t i = 0; i < n; i++) scale = std::fmax(scale, std::fabs(want[i]));
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    double d = std::fabs(double(got[i]) - want[i]);
    if (!(d <= 1e-5 * scale)) {
      if (bad < 3) std::printf("  %s: [%zu] = %.9g, want %.9g\n", what.c_str(), i, got[i], want[i]);
      bad++;
    }
  }
  if (bad > 0) Fail(what + ": " + std::to_string(bad) + " of " + std::to_string(n) + " values differ");
}

// Launch runs kernel name as cuLaunchKernel would, args one pointer per parameter.
void Launch(const char* name, Dim3 grid, Dim3 block, size_t smem, std::initializer_list<void*> args) {
  const onnxrl_fakecuda::Kernel* k = onnxrl_fakecuda::FindKernel(name);
  if (k == nullptr) {
    Fail(std::string("no kernel ") + name);
    return;
  }
  if (args.size() != k->param_sizes.size()) {
    Fail(std::string(name) + ": " + std::to_string(args.size()) + " arguments, the kernel has " +
         std::to_string(k->param_sizes.size()));
    return;
  }
  std::vector<void*> params(args);
  k->run(grid, block, smem, params.data());
}

// Elementwise launches a grid-stride kernel as the backend does on a one-multiprocessor
// device (at most 16 blocks of 256), and once more on an odd grid of small blocks.
template <typename Check>
void Elementwise(const char* name, long long n, std::initializer_list<void*> args, Check check) {
  long long blocks = (n + 255) / 256;
  Launch(name, Dim3{static_cast<unsigned>(blocks < 16 ? (blocks > 0 ? blocks : 1) : 16), 1, 1}, Dim3{256, 1, 1}, 0,
         args);
  check("256-thread blocks");
  Launch(name, Dim3{3, 1, 1}, Dim3{37, 1, 1}, 0, args);
  check("3 blocks of 37");
}

// ---- the emulator ----

void TestBarriers() {
  // Each thread writes its slot, waits, reads its neighbour's, waits, writes again: any fiber
  // passing a barrier early reads a stale or NaN slot.
  struct Args {
    float* shared;
    float* out;
    int rounds;
  };
  static float shared[1024];
  for (Dim3 block : {Dim3{256, 1, 1}, Dim3{16, 4, 2}, Dim3{1024, 1, 1}, Dim3{1, 1, 1}}) {
    const unsigned n = block.x * block.y * block.z;
    const Dim3 grid{2, 3, 1};
    std::vector<float> out(6 * n, -1.0f);
    Args a{shared, out.data(), 5};
    onnxrl_fakecuda::RunGrid(grid, block, 64, [](const void* p) {
      const Args& a = *static_cast<const Args*>(p);
      const unsigned n = blockDim.x * blockDim.y * blockDim.z;
      const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
      const unsigned b = blockIdx.x + gridDim.x * blockIdx.y;
      float* dyn = static_cast<float*>(onnxrl_fakecuda::DynamicShared());
      if (t == 0 && !std::isnan(dyn[15])) dyn[0] = -1000.0f;  // dynamic shared memory starts as NaNs
      float v = float(t);
      for (int r = 0; r < a.rounds; r++) {
        a.shared[t] = v + float(b);
        onnxrl_fakecuda::SyncThreads();
        v = a.shared[(t + 1) % n] - float(b);
        onnxrl_fakecuda::SyncThreads();
      }
      a.out[b * n + t] = v + (t == 0 && dyn[0] == -1000.0f ? 0.5f : 0.0f);
    }, &a);
    for (unsigned b = 0; b < 6; b++)
      for (unsigned t = 0; t < n; t++) {
        float want = float((t + 5) % n);
        if (out[b * n + t] != want) {
          Fail("barriers, block " + std::to_string(block.x) + "x" + std::to_string(block.y) + "x" +
               std::to_string(block.z) + ": thread " + std::to_string(t) + " of block " + std::to_string(b) + " got " +
               std::to_string(out[b * n + t]) + ", want " + std::to_string(want));
          return;
        }
      }
  }
  // Threads that exit early do not hold the others at a barrier.
  struct Early {
    int* hits;
  };
  int hits = 0;
  Early e{&hits};
  onnxrl_fakecuda::RunGrid(Dim3{1, 1, 1}, Dim3{64, 1, 1}, 0, [](const void* p) {
    if (threadIdx.x % 2 == 1) return;
    onnxrl_fakecuda::SyncThreads();
    (*static_cast<const Early*>(p)->hits)++;
  }, &e);
  if (hits != 32) Fail("early exits: " + std::to_string(hits) + " threads passed the barrier, want 32");
}

// ---- kernels ----

constexpr int32_t kActs[] = {kActNone, kActRelu, kActTanh, kActSigmoid, kActLeakyRelu, kActClip};

void TestGemm() {
  int cases = 0;
  for (long long M : {1, 7, 65, 130})
    for (int N : {1, 2, 63, 64, 70})
      for (int K : {0, 1, 4, 33, 64})
        for (int variant = 0; variant < 4; variant++) {
          const bool with_bias = variant & 1;
          int accum = (variant >> 1) & 1;
          int32_t act = kActs[cases % 6];
          const long long pad = cases % 3 == 0 ? 3 : 0;  // row pitches past the rows' ends
          long long lda = K + pad, ldw = N + pad, ldo = N + pad;
          cases++;
          Buf a(M * lda), w(K * ldw), bias(N), out(M * ldo);
          Fill(a);
          Fill(w);
          Fill(bias);
          if (accum) Fill(out);
          std::vector<float> want(out.data(), out.data() + out.total);
          float pa = act == kActClip ? -0.5f : 0.1f, pb = 0.5f;
          for (long long m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
              float acc = 0.0f;
              for (int k = 0; k < K; k++) acc += a[m * lda + k] * w[k * ldw + n];
              if (with_bias) acc += bias[n];
              if (accum) acc += out[m * ldo + n];
              want[m * ldo + n] = ApplyAct(act, acc, pa, pb);
            }
          cu::CUdeviceptr pa_ = Dev(a.data()), pw = Dev(w.data()), pbias = with_bias ? Dev(bias.data()) : 0,
                          po = Dev(out.data());
          int m32 = static_cast<int>(M);
          Launch("onnxrl_gemm", Dim3{static_cast<unsigned>((N + 63) / 64), static_cast<unsigned>((M + 63) / 64), 1},
                 Dim3{256, 1, 1}, 0,
                 {&pa_, &lda, &pw, &ldw, &pbias, &po, &ldo, &m32, &N, &K, &accum, &act, &pa, &pb});
          std::string what = "gemm M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                             (with_bias ? " bias" : "") + (accum ? " accum" : "") + " act=" + std::to_string(act) +
                             " pad=" + std::to_string(pad);
          // Every value, the pitches' padding included (left as it was: NaN or the accumulated input).
          for (size_t i = 0; i < out.total; i++) {
            bool same = (std::isnan(want[i]) && std::isnan(out[i])) ||
                        std::fabs(out[i] - want[i]) <= 1e-5 * std::fmax(1.0, std::fabs(want[i]));
            if (!same) {
              Fail(what + ": [" + std::to_string(i) + "] = " + std::to_string(out[i]) + ", want " +
                   std::to_string(want[i]));
              break;
            }
          }
          if (!accum && pad == 0 && K > 0) {
            std::vector<float> host(M * N);
            HostDense(a.data(), M, K, w.data(), N, with_bias ? bias.data() : nullptr, act, pa, pb, host.data());
            Compare(what + " vs HostDense", out.data(), host.data(), host.size());
          }
        }
  std::printf("gemm: %d cases\n", cases);
}

// One onnxrl_mlp case: the trunk's widths, then the heads' (each reading the trunk's output,
// or the input without a trunk).
struct MlpCase {
  int k0;
  std::vector<int> trunk, heads;
};

void RunMlp(const MlpCase& c, long long M, int rows_wanted) {
  const int layers = static_cast<int>(c.trunk.size() + c.heads.size());
  devargs::MlpDesc d{};
  d.layers = layers;
  d.heads = static_cast<int>(c.heads.size());
  std::vector<std::unique_ptr<Buf>> ws, bs, outs;
  int width = c.k0, k = c.k0;
  std::string what = "mlp k0=" + std::to_string(c.k0) + " trunk";
  for (int l = 0; l < layers; l++) {
    const bool head = l >= static_cast<int>(c.trunk.size());
    const int n = head ? c.heads[l - c.trunk.size()] : c.trunk[l];
    d.k[l] = k;
    d.n[l] = n;
    d.act[l] = kActs[(l + c.k0) % 6];
    d.a[l] = d.act[l] == kActClip ? -0.5f : 0.1f;
    d.b[l] = 0.5f;
    ws.push_back(std::make_unique<Buf>(static_cast<size_t>(k) * n));
    bs.push_back(std::make_unique<Buf>(n));
    // Weights of a trained network's scale (1/sqrt(K)): values stay near 1 through the layers,
    // so that 1e-5 stays well above the rounding of sums in another order (FMA in host.cc).
    Fill(*ws.back(), -1.0f / std::sqrt(float(k)), 1.0f / std::sqrt(float(k)));
    Fill(*bs.back());
    d.w[l] = Dev(ws.back()->data());
    d.bias[l] = (l % 3 == 2) ? 0 : Dev(bs.back()->data());  // some layers without a bias
    width = std::max(width, k);
    if (!head) {
      width = std::max(width, n);
      k = n;
      what += " " + std::to_string(n);
    }
  }
  what += " heads";
  for (int n : c.heads) what += " " + std::to_string(n);
  d.width = width;
  // Rows per block: as the backend picks them (all that fit, at most 64), or rows_wanted.
  const int smem_cap = 48 * 1024;
  int fit = std::min(64, smem_cap / (2 * width * 4)) / 4 * 4;
  d.rows = rows_wanted > 0 ? std::min(rows_wanted, fit) : fit;
  what += " M=" + std::to_string(M) + " rows=" + std::to_string(d.rows);
  Buf in(M * c.k0);
  Fill(in);
  for (size_t h = 0; h < c.heads.size(); h++) {
    outs.push_back(std::make_unique<Buf>(M * c.heads[h]));
    d.out[h] = Dev(outs.back()->data());
  }
  cu::CUdeviceptr pin = Dev(in.data());
  int m32 = static_cast<int>(M);
  Launch("onnxrl_mlp", Dim3{static_cast<unsigned>((M + d.rows - 1) / d.rows), 1, 1}, Dim3{256, 1, 1},
         2 * d.rows * width * sizeof(float), {&pin, &m32, &d});
  // The reference: HostDense layer by layer.
  std::vector<float> x(in.data(), in.data() + M * c.k0);
  for (size_t l = 0; l < c.trunk.size(); l++) {
    std::vector<float> y(M * d.n[l]);
    HostDense(x.data(), M, d.k[l], ws[l]->data(), d.n[l], d.bias[l] ? bs[l]->data() : nullptr, d.act[l], d.a[l],
              d.b[l], y.data());
    x.swap(y);
  }
  for (size_t h = 0; h < c.heads.size(); h++) {
    const size_t l = c.trunk.size() + h;
    std::vector<float> y(M * d.n[l]);
    HostDense(x.data(), M, d.k[l], ws[l]->data(), d.n[l], d.bias[l] ? bs[l]->data() : nullptr, d.act[l], d.a[l],
              d.b[l], y.data());
    Compare(what + " head " + std::to_string(h), outs[h]->data(), y.data(), y.size());
    if (!outs[h]->Tail()) Fail(what + " head " + std::to_string(h) + ": wrote past the last row");
  }
}

void TestMlp() {
  const MlpCase cases[] = {
      {4, {64, 64}, {2}},               // CartPole's policy
      {4, {64, 64}, {2, 1}},            // actor and critic heads
      {3, {260}, {1, 5}},               // widths past the tiles, K not a multiple of 4
      {8, {}, {4, 12, 7, 1}},           // heads alone on a shared input
      {33, {16, 20, 8}, {4}},           // a deeper trunk
      {12, {7, 13}, {3, 9}},            // no multiple of 4 but the input
      {4, {8, 8, 8, 8, 8, 8}, {4, 4}},  // eight layers
      {132, {260, 128}, {260}},         // wide
      {16, {4}, {16}},                  // narrow
  };
  int runs = 0;
  for (const MlpCase& c : cases)
    for (long long M : {1, 7, 65, 130})
      for (int rows : {0, 4, 8}) {
        RunMlp(c, M, rows);
        runs++;
      }
  std::printf("mlp: %d runs\n", runs);
}

void TestSoftmax() {
  struct Shape {
    long long outer, len, inner;
  };
  for (Shape s : {Shape{1, 1, 1}, Shape{7, 5, 1}, Shape{3, 4, 5}, Shape{65, 2, 3}, Shape{300, 6, 1}})
    for (int log : {0, 1}) {
      const size_t n = s.outer * s.len * s.inner;
      Buf in(n), out(n);
      Fill(in, -4.0f, 4.0f);
      std::vector<float> want(n);
      HostSoftmax(log != 0, in.data(), want.data(), s.outer, s.len, s.inner);
      cu::CUdeviceptr pi = Dev(in.data()), po = Dev(out.data());
      std::string what = "softmax " + std::to_string(s.outer) + "x" + std::to_string(s.len) + "x" +
                         std::to_string(s.inner) + (log ? " log" : "");
      Elementwise("onnxrl_softmax", s.outer * s.inner, {&pi, &po, &s.outer, &s.len, &s.inner, &log},
                  [&](const char* how) {
                    Compare(what + " " + how, out.data(), want.data(), n);
                    if (!out.Tail()) Fail(what + ": wrote past the end");
                  });
    }
}

void TestBinary() {
  struct Case {
    std::vector<long long> dims, sa, sb;
    size_t na, nb;
  };
  const Case cases[] = {
      {{2, 3, 4}, {12, 4, 1}, {0, 1, 0}, 24, 3},                   // [2,3,4] op [3,1]
      {{7}, {1}, {0}, 7, 1},                                       // a scalar
      {{5, 1, 7, 3}, {21, 21, 3, 1}, {0, 0, 1, 7}, 105, 21},       // [5,1,7,3] op [3,7] transposed strides
      {{65, 70}, {70, 1}, {70, 1}, 65 * 70, 65 * 70},              // same shapes
      {{300, 2}, {0, 1}, {1, 0}, 2, 300},                          // both broadcast
  };
  for (const Case& c : cases)
    for (int32_t op : {kBinAdd, kBinSub, kBinMul, kBinDiv}) {
      int rank = static_cast<int>(c.dims.size());
      long long n = 1;
      for (long long x : c.dims) n *= x;
      Buf a(c.na), b(c.nb), out(n);
      Fill(a);
      Fill(b, 0.5f, 1.5f);
      std::vector<float> want(n);
      HostBinary(op, a.data(), b.data(), want.data(), reinterpret_cast<const int64_t*>(c.dims.data()),
                 reinterpret_cast<const int64_t*>(c.sa.data()), reinterpret_cast<const int64_t*>(c.sb.data()), rank);
      devargs::Dims dims{}, sa{}, sb{};
      for (int i = 0; i < rank; i++) {
        dims.d[i] = c.dims[i];
        sa.d[i] = c.sa[i];
        sb.d[i] = c.sb[i];
      }
      cu::CUdeviceptr pa = Dev(a.data()), pb = Dev(b.data()), po = Dev(out.data());
      int code = op;
      std::string what = "binary op " + std::to_string(op) + " rank " + std::to_string(rank) + " n " + std::to_string(n);
      Elementwise("onnxrl_binary", n, {&pa, &pb, &po, &n, &rank, &code, &dims, &sa, &sb}, [&](const char* how) {
        Compare(what + " " + how, out.data(), want.data(), n);
        if (!out.Tail()) Fail(what + ": wrote past the end");
      });
    }
}

void TestStrided() {
  struct Case {
    const char* name;
    long long in_n, base;
    std::vector<long long> dims, strides;
  };
  const Case cases[] = {
      {"transpose [3,4,5] perm 2,0,1", 60, 0, {5, 3, 4}, {1, 20, 5}},
      {"transpose [65,70]", 65 * 70, 0, {70, 65}, {1, 70}},
      {"slice [10,8] rows 2..9 step 3, cols 1..7", 80, 17, {3, 6}, {24, 1}},
      {"slice [9] reversed", 9, 8, {9}, {-1}},
      {"transpose [2,3,4,5] perm 3,1,0,2", 120, 0, {5, 3, 2, 4}, {1, 20, 60, 5}},
  };
  for (const Case& c : cases) {
    int rank = static_cast<int>(c.dims.size());
    long long n = 1;
    for (long long x : c.dims) n *= x;
    Buf in(c.in_n), out(n);
    Fill(in);
    std::vector<float> want(n);
    HostStridedCopy(in.data(), c.base, reinterpret_cast<const int64_t*>(c.dims.data()),
                    reinterpret_cast<const int64_t*>(c.strides.data()), rank, want.data());
    devargs::Dims dims{}, strides{};
    for (int i = 0; i < rank; i++) {
      dims.d[i] = c.dims[i];
      strides.d[i] = c.strides[i];
    }
    cu::CUdeviceptr pi = Dev(in.data()), po = Dev(out.data());
    long long base = c.base;
    Elementwise("onnxrl_strided", n, {&pi, &base, &po, &n, &rank, &dims, &strides}, [&](const char* how) {
      Compare(std::string("strided ") + c.name + " " + how, out.data(), want.data(), n);
      if (!out.Tail()) Fail(std::string("strided ") + c.name + ": wrote past the end");
    });
  }
}

void TestCopy2dFillUnary() {
  struct Case {
    long long rows, cols, spitch, dpitch;
  };
  for (Case c : {Case{1, 1, 1, 1}, Case{7, 3, 5, 9}, Case{65, 70, 70, 140}, Case{300, 2, 4, 2}}) {
    Buf src(c.rows * c.spitch), dst(c.rows * c.dpitch);
    Fill(src);
    std::vector<float> want(dst.data(), dst.data() + dst.n);
    for (long long r = 0; r < c.rows; r++)
      for (long long k = 0; k < c.cols; k++) want[r * c.dpitch + k] = src[r * c.spitch + k];
    cu::CUdeviceptr ps = Dev(src.data()), pd = Dev(dst.data());
    std::string what = "copy2d " + std::to_string(c.rows) + "x" + std::to_string(c.cols);
    Elementwise("onnxrl_copy2d", c.rows * c.cols, {&ps, &c.spitch, &pd, &c.dpitch, &c.rows, &c.cols},
                [&](const char* how) {
                  for (size_t i = 0; i < dst.n; i++)
                    if (!(dst[i] == want[i] || (std::isnan(dst[i]) && std::isnan(want[i])))) {
                      Fail(what + " " + how + ": [" + std::to_string(i) + "] wrong (a gap between rows written?)");
                      break;
                    }
                  if (!dst.Tail()) Fail(what + ": wrote past the end");
                });
  }
  for (long long n : {1LL, 7LL, 4096LL, 5000LL}) {
    Buf out(n);
    float v = 0.25f;
    cu::CUdeviceptr po = Dev(out.data());
    Elementwise("onnxrl_fill", n, {&po, &n, &v}, [&](const char* how) {
      for (long long i = 0; i < n; i++)
        if (out[i] != v) {
          Fail("fill " + std::to_string(n) + " " + how);
          break;
        }
      if (!out.Tail()) Fail("fill: wrote past the end");
    });
  }
  for (int32_t act : {kActNone, kActRelu, kActLeakyRelu, kActTanh, kActSigmoid, kActExp, kActLog, kActClip, kActNeg}) {
    long long n = 1000;
    Buf in(n), out(n);
    Fill(in, act == kActLog ? 0.01f : -3.0f, 3.0f);
    float a = act == kActClip ? -0.5f : 0.1f, b = 0.5f;
    std::vector<float> want(n);
    HostUnary(act, a, b, in.data(), want.data(), n);
    cu::CUdeviceptr pi = Dev(in.data()), po = Dev(out.data());
    int code = act;
    Elementwise("onnxrl_unary", n, {&pi, &po, &n, &code, &a, &b}, [&](const char* how) {
      Compare("unary act " + std::to_string(act) + " " + how, out.data(), want.data(), n);
    });
  }
}

// The gemm the backend launches (DeviceContext::Gemm) for one block of rows.
void Gemm(const float* a, long long lda, const float* w, long long ldw, const float* bias, float* out, long long ldo,
          long long M, long long N, long long K, bool accum) {
  cu::CUdeviceptr pa = Dev(a), pw = Dev(w), pb = Dev(bias), po = Dev(out);
  int m = static_cast<int>(M), n = static_cast<int>(N), k = static_cast<int>(K), acc = accum, act = kActNone;
  float x = 0, y = 0;
  Launch("onnxrl_gemm", Dim3{static_cast<unsigned>((N + 63) / 64), static_cast<unsigned>((M + 63) / 64), 1},
         Dim3{256, 1, 1}, 0, {&pa, &lda, &pw, &ldw, &pb, &po, &ldo, &m, &n, &k, &acc, &act, &x, &y});
}

void Grid(const char* kernel, long long n, std::initializer_list<void*> args) {
  long long blocks = (n + 255) / 256;
  Launch(kernel, Dim3{static_cast<unsigned>(blocks < 16 ? blocks : 16), 1, 1}, Dim3{256, 1, 1}, 0, args);
}

// The recurrent kernels composed as the backend composes them (ops/rnn.cc), over T steps with
// the state updated in place, against HostLstm and HostGru.
void TestRnn() {
  for (long long B : {1, 7, 65})
    for (long long H : {1, 5, 64})
      for (long long I : {3, 16}) {
        const long long T = 3;
        // LSTM
        {
          const long long G = 4 * H;
          Buf x(T * B * I), wx(I * G), wh(H * G), bx(G), bh(G), h0(B * H), c0(B * H);
          for (Buf* b : {&x, &wx, &wh, &bx, &bh, &h0, &c0}) Fill(*b);
          RnnWeights rw;
          rw.I = I;
          rw.H = H;
          rw.wx = wx.data();
          rw.wh = wh.data();
          rw.bx = bx.data();
          rw.bh = bh.data();
          std::vector<float> y(T * B * H), yh(B * H), yc(B * H), scratch(RnnScratch(4, I, H, B));
          HostLstm(rw, x.data(), T, B, h0.data(), c0.data(), y.data(), yh.data(), yc.data(), scratch.data());
          Buf gates(B * G), h(B * H), c(B * H), dy(T * B * H);
          std::memcpy(h.data(), h0.data(), B * H * sizeof(float));
          std::memcpy(c.data(), c0.data(), B * H * sizeof(float));
          int h_int = static_cast<int>(H);
          long long n = B * H;
          for (long long t = 0; t < T; t++) {
            Gemm(x.data() + t * B * I, I, wx.data(), G, bx.data(), gates.data(), G, B, G, I, false);
            Gemm(h.data(), H, wh.data(), G, bh.data(), gates.data(), G, B, G, H, true);
            cu::CUdeviceptr pg = Dev(gates.data()), pc = Dev(c.data()), ph = Dev(h.data()),
                            py = Dev(dy.data() + t * B * H);
            Grid("onnxrl_lstm_cell", n, {&pg, &pc, &pc, &ph, &py, &B, &h_int});
          }
          std::string what = "lstm B=" + std::to_string(B) + " H=" + std::to_string(H) + " I=" + std::to_string(I);
          Compare(what + " Y", dy.data(), y.data(), y.size());
          Compare(what + " Y_h", h.data(), yh.data(), yh.size());
          Compare(what + " Y_c", c.data(), yc.data(), yc.size());
          // The first step in one launch (the state read and written in different buffers).
          HostLstm(rw, x.data(), 1, B, h0.data(), c0.data(), y.data(), yh.data(), yc.data(), scratch.data());
          int i_int = static_cast<int>(I);
          cu::CUdeviceptr px = Dev(x.data()), ph0 = Dev(h0.data()), pc0 = Dev(c0.data()), pwx = Dev(wx.data()),
                          pwh = Dev(wh.data()), pbx = Dev(bx.data()), pbh = Dev(bh.data()), pc = Dev(c.data()),
                          ph = Dev(h.data()), py = Dev(dy.data());
          Grid("onnxrl_lstm_step", (B + 3) / 4 * H,
               {&px, &ph0, &pc0, &pwx, &pwh, &pbx, &pbh, &pc, &ph, &py, &B, &i_int, &h_int});
          Compare("lstm_step" + what.substr(4) + " Y", dy.data(), y.data(), B * H);
          Compare("lstm_step" + what.substr(4) + " Y_h", h.data(), yh.data(), yh.size());
          Compare("lstm_step" + what.substr(4) + " Y_c", c.data(), yc.data(), yc.size());
        }
        // GRU, both forms
        for (bool lbr : {true, false}) {
          const long long G = 3 * H;
          Buf x(T * B * I), wx(I * G), wh(H * G), bx(G), bh(G), h0(B * H);
          for (Buf* b : {&x, &wx, &wh, &bx, &bh, &h0}) Fill(*b);
          RnnWeights rw;
          rw.I = I;
          rw.H = H;
          rw.wx = wx.data();
          rw.wh = wh.data();
          rw.bx = bx.data();
          rw.bh = bh.data();
          std::vector<float> y(T * B * H), yh(B * H), scratch(RnnScratch(3, I, H, B));
          HostGru(rw, lbr, x.data(), T, B, h0.data(), y.data(), yh.data(), scratch.data());
          Buf gx(B * G), gh(B * G), rh(B * H), h(B * H), dy(T * B * H);
          std::memcpy(h.data(), h0.data(), B * H * sizeof(float));
          int h_int = static_cast<int>(H);
          long long n = B * H;
          for (long long t = 0; t < T; t++) {
            cu::CUdeviceptr pgx = Dev(gx.data()), pgh = Dev(gh.data()), ph = Dev(h.data()), prh = Dev(rh.data()),
                            py = Dev(dy.data() + t * B * H);
            Gemm(x.data() + t * B * I, I, wx.data(), G, bx.data(), gx.data(), G, B, G, I, false);
            if (lbr) {
              Gemm(h.data(), H, wh.data(), G, bh.data(), gh.data(), G, B, G, H, false);
              Grid("onnxrl_gru_lbr", n, {&pgx, &pgh, &ph, &ph, &py, &B, &h_int});
            } else {
              Gemm(h.data(), H, wh.data(), G, bh.data(), gh.data(), G, B, 2 * H, H, false);
              Grid("onnxrl_gru_reset", n, {&pgx, &pgh, &ph, &prh, &B, &h_int});
              Gemm(rh.data(), H, wh.data() + 2 * H, G, bh.data() + 2 * H, gh.data() + 2 * H, G, B, H, H, false);
              Grid("onnxrl_gru_out", n, {&pgx, &pgh, &ph, &ph, &py, &B, &h_int});
            }
          }
          std::string what = std::string(lbr ? "gru lbr" : "gru") + " B=" + std::to_string(B) +
                             " H=" + std::to_string(H) + " I=" + std::to_string(I);
          Compare(what + " Y", dy.data(), y.data(), y.size());
          Compare(what + " Y_h", h.data(), yh.data(), yh.size());
        }
      }
  // A null y is not written.
  {
    long long B = 2, n = 2;
    int h_int = 1;
    Buf gates(8), c(2), h(2);
    Fill(gates);
    Fill(c);
    cu::CUdeviceptr pg = Dev(gates.data()), pc = Dev(c.data()), ph = Dev(h.data()), py = 0;
    Grid("onnxrl_lstm_cell", n, {&pg, &pc, &pc, &ph, &py, &B, &h_int});
    if (std::isnan(h[0]) || std::isnan(h[1])) Fail("lstm_cell with a null y");
  }
}

// Every kernel of device.cuh is in the emulator's table, and nothing else.
void TestTable() {
  const std::string& src = DeviceSource();
  std::regex kernel("extern \"C\" __global__ void (?:__launch_bounds__\\([^)]*\\)\\s*)?([A-Za-z0-9_]+)\\(");
  size_t found = 0;
  for (auto it = std::sregex_iterator(src.begin(), src.end(), kernel); it != std::sregex_iterator(); ++it) {
    found++;
    if (onnxrl_fakecuda::FindKernel((*it)[1].str().c_str()) == nullptr)
      Fail("kernel " + (*it)[1].str() + " of device.cuh is not in tests/fakecuda/kernel_table.cc");
  }
  if (found != onnxrl_fakecuda::Kernels().size())
    Fail("device.cuh has " + std::to_string(found) + " kernels, the table " +
         std::to_string(onnxrl_fakecuda::Kernels().size()));
}

}  // namespace

int main() {
  TestTable();
  TestBarriers();
  TestGemm();
  TestMlp();
  TestSoftmax();
  TestBinary();
  TestStrided();
  TestCopy2dFillUnary();
  TestRnn();
  std::printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
