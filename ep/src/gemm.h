// The host backend's matrix multiply: weights packed once into column panels, a register-tiled
// micro-kernel per instruction set (AVX-512, AVX2+FMA, and a portable one) chosen once at load
// time, with the bias and the activation applied in registers before the only store.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace onnxrl_ep {

// kPanel is the width of a packed column panel: 16 floats, one AVX-512 register or two AVX2
// ones.
constexpr int64_t kPanel = 16;

// PackedWeights is W[K][N] as ceil(N/16) panels of K rows of 16 floats (the last panel padded
// with zeros), 64-byte aligned, and the bias padded the same way (zeros when absent).
class PackedWeights {
 public:
  // Pack copies w (K rows of N floats, row pitch ldw) and bias (N floats, or null).
  static PackedWeights Pack(const float* w, int64_t K, int64_t N, int64_t ldw, const float* bias);
  // Repack does the same into this one's storage, allocating only when it must grow.
  void Repack(const float* w, int64_t K, int64_t N, int64_t ldw, const float* bias);

  int64_t K = 0, N = 0;
  int64_t panels = 0;
  bool empty() const { return data == nullptr; }
  const float* panel(int64_t p) const { return data.get() + p * K * kPanel; }
  const float* bias() const { return bias_.data(); }

 private:
  struct Free {
    void operator()(float* p) const;
  };
  std::unique_ptr<float[], Free> data;
  size_t capacity = 0;  // floats
  std::vector<float> bias_;  // panels * 16
};

// Epilogue: what is done to a tile's sums in registers: + bias, then act(a, b) (kernels.h).
struct Epilogue {
  int32_t act = 0;
  float a = 0.0f, b = 0.0f;
};

// Gemm: out[m][n] = act(sum_k x[m][k] w[k][n] + bias[n]) for M rows, x's rows lda floats apart
// and out's ldo apart; columns [n0, n1) of w only (n0 a multiple of 16), written to out's
// columns [0, n1 - n0). n1 may pass w.N up to the next multiple of 8: the padding's columns
// (act(0)) are written too, and a row's last vector is then one whole store. The caller splits
// rows or column ranges over threads.
void Gemm(const float* x, int64_t lda, int64_t M, const PackedWeights& w, int64_t n0, int64_t n1, const Epilogue& e,
          float* out, int64_t ldo);

// GemmStacked is Gemm of the rows [x1[m], x2[m]] without building them: row m's first K1
// values at x1 + m * lda1 multiply w's first K1 rows, its other w.K - K1 at x2 + m * lda2 the
// rest (an LSTM step's [x_t, h] by [Wx; Wh]).
void GemmStacked(const float* x1, int64_t lda1, int64_t K1, const float* x2, int64_t lda2, int64_t M,
                 const PackedWeights& w, int64_t n0, int64_t n1, const Epilogue& e, float* out, int64_t ldo);

// Activations: out[i] = act(in[i]) over n floats (in == out allowed), in vectors of the chosen
// instruction set as the Gemm epilogue does.
void Activations(const Epilogue& e, const float* in, float* out, int64_t n);

// Isa names the micro-kernels in use: "avx512", "avx2" or "portable". The environment
// variable ONNXRL_EP_ISA (one of those names) picks a lower one, for tests and measurements.
const char* Isa();

}  // namespace onnxrl_ep

namespace onnxrl_ep {

// GemmGatherT: out_m[n * ldo] = act(sum_k rows[m][off[k]] w[k][n] + bias[n]) for M rows and
// all N columns of w. Row m of the left matrix is not stored: it is read in place through its
// base pointer rows[m] at the K offsets off (a convolution's window over its input, gathered
// without unfolding), and the result is stored transposed, row m's column n at outs[m] + n *
// ldo (an NCHW plane per output channel; rows may come from different images).
void GemmGatherT(const float* const* rows, const int64_t* off, int64_t M, const PackedWeights& w, const Epilogue& e,
                 float* const* outs, int64_t ldo);

}  // namespace onnxrl_ep
