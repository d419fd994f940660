// The feature-major kernels' vectors never cross a call (every helper is always_inline): the
// ABI note GCC gives for passing them by value does not apply (gemm.cc is compiled with
// -Wno-psabi for the same reason).
#pragma GCC diagnostic ignored "-Wpsabi"

#include "host_group.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "plan.h"
#include "simd.h"

namespace onnxrl_ep {

namespace {

// CopyCols copies the first N columns of n rows cols floats apart to rows N floats apart, N a
// constant so that a row is a few fixed moves (a logits row of 4 one 16-byte load and store).
template <int N>
void CopyCols(const float* src, int64_t cols, int64_t n, float* o) {
  for (int64_t r = 0; r < n; r++)
    for (int j = 0; j < N; j++) o[r * N + j] = src[r * cols + j];
}

Epilogue EpilogueOf(const DenseKernel& d) {
  Epilogue e;
  e.act = d.act;
  e.a = d.a;
  e.b = d.b;
  return e;
}

#if defined(ONNXRL_X86_ISAS)
using namespace simd;

// FmBlock: out[j][r] = act(bias[j] + sum_k in[k][r] w[k][j]) for NJ features from j = 0 and
// RV vectors of 16 rows from r = 0; in's and out's feature rows are T floats apart, w's rows
// ldw. The sums start from the bias and add the products in the order of k, as the row-major
// Gemm's do: the same results to the bit.
template <int A, int NJ, int RV>
ONNXRL_TARGET_AVX512 ONNXRL_ALWAYS_INLINE void FmBlock(const float* in, int64_t T, int64_t K, const float* w,
                                                     int64_t ldw, const float* bias, const Epilogue& e, float* out) {
  V16 acc[NJ * RV];
#pragma GCC unroll 16
  for (int j = 0; j < NJ; j++) {
    const V16 b = V16{} + bias[j];
#pragma GCC unroll 4
    for (int v = 0; v < RV; v++) acc[j * RV + v] = b;
  }
  for (int64_t k = 0; k < K; k++) {
    V16 h[RV];
#pragma GCC unroll 4
    for (int v = 0; v < RV; v++) h[v] = Load<V16>(in + k * T + v * 16);
#pragma GCC unroll 16
    for (int j = 0; j < NJ; j++) {
      const float s = w[k * ldw + j];
#pragma GCC unroll 4
      for (int v = 0; v < RV; v++) acc[j * RV + v] += s * h[v];
    }
  }
  Activate<A>(acc, NJ * RV, e);
#pragma GCC unroll 16
  for (int j = 0; j < NJ; j++)
#pragma GCC unroll 4
    for (int v = 0; v < RV; v++) Store<V16>(out + j * T + v * 16, acc[j * RV + v]);
}

// FmLayerRows computes a layer's N features for T rows (a multiple of RV * 16) in blocks of 8
// features by RV vectors of rows (16 sums in registers for RV = 2, as the row-major tiles).
template <int A, int RV>
ONNXRL_TARGET_AVX512 __attribute__((noinline)) void FmLayerRows(const float* in, int64_t T, int64_t K, int64_t N,
                                                               const float* w, const float* bias, const Epilogue& e,
                                                               float* out) {
  for (int64_t r = 0; r < T; r += RV * 16) {
    int64_t j = 0;
    for (; j + 8 <= N; j += 8) FmBlock<A, 8, RV>(in + r, T, K, w + j, N, bias + j, e, out + j * T + r);
    switch (N - j) {
#define ONNXRL_FM_REST(NJ)                                                                 \
  case NJ:                                                                                 \
    FmBlock<A, NJ, RV>(in + r, T, K, w + j, N, bias + j, e, out + j * T + r);             \
    break;
      ONNXRL_FM_REST(1)
      ONNXRL_FM_REST(2)
      ONNXRL_FM_REST(3)
      ONNXRL_FM_REST(4)
      ONNXRL_FM_REST(5)
      ONNXRL_FM_REST(6)
      ONNXRL_FM_REST(7)
#undef ONNXRL_FM_REST
      default:
        break;
    }
  }
}

// FmRun runs FmLayerRows compiled for e's activation where policies fuse it (none, ReLU,
// Tanh), else for any (a switch per block).
template <int RV>
void FmRun(const float* in, int64_t T, int64_t K, int64_t N, const float* w, const float* bias, const Epilogue& e,
             float* out) {
  switch (e.act) {
    case kActNone:
      return FmLayerRows<kActNone, RV>(in, T, K, N, w, bias, e, out);
    case kActRelu:
      return FmLayerRows<kActRelu, RV>(in, T, K, N, w, bias, e, out);
    case kActTanh:
      return FmLayerRows<kActTanh, RV>(in, T, K, N, w, bias, e, out);
    default:
      return FmLayerRows<kAnyAct, RV>(in, T, K, N, w, bias, e, out);
  }
}

// Transpose16x8 holds the three rounds of two-register permutes (vpermt2ps) that turn 16 rows
// of 8 floats, two rows per vector, into 8 vectors of 16 rows, one per column: round t pairs
// the vectors that differ in bit t of their index and gives each output the elements of one
// value of column bit t; the lanes within a vector are in the order of row and column, so that
// after the last round lane r is row r. Worked out once by following every element.
struct Transpose16x8 {
  I16 idx[3][8];
  Transpose16x8() {
    // at[i][l]: the element (row * 8 + column) in lane l of vector i.
    int at[8][16];
    for (int i = 0; i < 8; i++)
      for (int l = 0; l < 16; l++) at[i][l] = (2 * i + l / 8) * 8 + l % 8;
    for (int t = 0; t < 3; t++) {
      int next[8][16];
      for (int o = 0; o < 8; o++) {
        const int a = o & ~(1 << t), b = o | (1 << t);
        // The elements of output o: those of a and b whose column bit t is o's bit t, in order.
        int n = 0;
        for (int e = 0; e < 128 && n < 16; e++) {
          if (((e % 8) >> t & 1) != (o >> t & 1)) continue;
          int src = -1;
          for (int l = 0; l < 16; l++) {
            if (at[a][l] == e) src = l;
            if (at[b][l] == e) src = 16 + l;
          }
          if (src < 0) continue;
          next[o][n] = e;
          idx[t][o][n] = src;
          n++;
        }
      }
      std::memcpy(at, next, sizeof(at));
    }
  }
};

// FmTransposeIn writes rows [0, n) of x (K floats each) as xT[k][r], rows n to T zero. K = 8
// runs 16 rows at a time through Transpose16x8; any other K element by element.
ONNXRL_TARGET_AVX512 __attribute__((noinline)) void FmTransposeIn(const float* x, int64_t K, int64_t n, int64_t T,
                                                                  float* xT) {
  int64_t r = 0;
  if (K == 8) {
    static const Transpose16x8 tr;
    for (; r + 16 <= n; r += 16) {
      V16 v[8], u[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; i++) v[i] = Load<V16>(x + (r + 2 * i) * 8);
#pragma GCC unroll 3
      for (int t = 0; t < 3; t++) {
#pragma GCC unroll 8
        for (int o = 0; o < 8; o++) u[o] = __builtin_shuffle(v[o & ~(1 << t)], v[o | (1 << t)], tr.idx[t][o]);
#pragma GCC unroll 8
        for (int o = 0; o < 8; o++) v[o] = u[o];
      }
#pragma GCC unroll 8
      for (int k = 0; k < 8; k++) Store<V16>(xT + k * T + r, v[k]);
    }
  }
  for (int64_t k = 0; k < K; k++)
    for (int64_t i = r; i < T; i++) xT[k * T + i] = i < n ? x[i * K + k] : 0.0f;
}

// FmStoreRows writes rows [0, n) of a head of N columns (a power of two, 2 to 8) from its
// feature-major form (column j's rows at src + j * T) as rows of N floats: 16 rows at a time
// by log2(N) rounds of interleaving pairs of vectors (the perfect shuffle), where element by
// element the narrow MLP's logits took about 2.6% of its time at 4,096 rows (perf); the rest
// of the rows element by element.
template <int N>
ONNXRL_TARGET_AVX512 __attribute__((noinline)) void FmStoreRows(const float* src, int64_t T, int64_t n, float* o) {
  const I16 lo = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23}, hi = lo + 8;
  int64_t r = 0;
  for (; r + 16 <= n; r += 16) {
    V16 v[N], u[N];
#pragma GCC unroll 8
    for (int j = 0; j < N; j++) v[j] = Load<V16>(src + j * T + r);
#pragma GCC unroll 3
    for (int round = 1; round < N; round *= 2) {
#pragma GCC unroll 4
      for (int i = 0; i < N / 2; i++) {
        u[2 * i] = __builtin_shuffle(v[i], v[i + N / 2], lo);
        u[2 * i + 1] = __builtin_shuffle(v[i], v[i + N / 2], hi);
      }
#pragma GCC unroll 8
      for (int j = 0; j < N; j++) v[j] = u[j];
    }
#pragma GCC unroll 8
    for (int j = 0; j < N; j++) Store<V16>(o + r * N + j * 16, v[j]);
  }
  for (; r < n; r++)
    for (int j = 0; j < N; j++) o[r * N + j] = src[j * T + r];
}
#endif

}  // namespace

HostDenseGroup::HostDenseGroup(Plan& plan, const DenseGroup& g) {
  for (size_t si : g.trunk) trunk_.push_back(static_cast<const DenseKernel*>(plan.steps[si].get()));
  for (size_t si : g.heads) heads_.push_back(static_cast<const DenseKernel*>(plan.steps[si].get()));
  in_ = trunk_.empty() ? heads_[0]->in[0] : trunk_[0]->in[0];
  for (const DenseKernel* d : trunk_) {
    width_ = std::max(width_, d->N);
    macs_ += d->K * d->N;
  }
  bool same = heads_.size() > 1;
  int64_t cols = 0;
  for (const DenseKernel* h : heads_) {
    macs_ += h->K * h->N;
    same = same && h->act == heads_[0]->act && h->a == heads_[0]->a && h->b == heads_[0]->b;
    cols += h->N;
  }
  // Rows per tile: two trunk buffers and the merged heads' output of about 32 KiB each.
  tile_ = std::clamp<int64_t>(int64_t{8192} / std::max<int64_t>({width_, cols, 1}), 16, 256) / 8 * 8;
  if (!same) return;
  // The heads side by side: W [K][sum N], one bias row, packed once.
  const int64_t K = heads_[0]->K;
  std::vector<float> w(K * cols), bias(cols, 0.0f);
  int64_t c0 = 0;
  for (const DenseKernel* h : heads_) {
    for (int64_t k = 0; k < K; k++) std::copy_n(h->w.data() + k * h->N, h->N, w.data() + k * cols + c0);
    if (!h->bias.empty()) std::copy_n(h->bias.data(), h->N, bias.data() + c0);
    col_.push_back(c0);
    c0 += h->N;
  }
  merged_epi_ = EpilogueOf(*heads_[0]);
  merged_ = PackedWeights::Pack(w.data(), K, cols, cols, bias.data());
#if defined(ONNXRL_X86_ISAS)
  // The feature-major form for narrow MLPs (input and every layer at most kFmMaxWidth wide),
  // beside the row-major one, which runs batches under kFmMinRows rows: a feature-major tile
  // is a whole number of 64-row blocks, so that at one row it computed 64 (the 64-256-256
  // MLP at batch 1 ran at 0.08 of the CPU provider's throughput), and a wide layer's
  // broadcast weights lose to the packed multiply (the Nature CNN's 3136 -> 512 layer: 0.77
  // at batch 256, against 1.12 row-major).
  if (ChosenIsa() == IsaLevel::kAvx512 && !trunk_.empty() && width_ <= kFmMaxWidth && trunk_[0]->K <= kFmMaxWidth &&
      cols <= kFmMaxWidth) {
    // Each step's weights and bias as they are ([K][N]), copied before PrepareHost packs them.
    for (const DenseKernel* d : trunk_) {
      FmLayer l;
      l.K = d->K;
      l.N = d->N;
      l.w = d->w;
      l.bias = d->bias.empty() ? std::vector<float>(d->N, 0.0f) : d->bias;
      l.e = EpilogueOf(*d);
      fm_.push_back(std::move(l));
    }
    FmLayer h;
    h.K = K;
    h.N = cols;
    h.w = std::move(w);
    h.bias = std::move(bias);
    h.e = merged_epi_;
    fm_.push_back(std::move(h));
    // Rows per tile: whole blocks of 64 rows (the heads' block).
    fm_tile_ = (tile_ + 63) / 64 * 64;
  }
#endif
  for (size_t si : g.heads) {
    auto* h = static_cast<DenseKernel*>(plan.steps[si].get());
    std::vector<float>().swap(h->w);
    std::vector<float>().swap(h->bias);
  }
}

void HostDenseGroup::Tiles(const float* x, int64_t m0, int64_t m1, float* const* outs) const {
  const int64_t k0 = trunk_.empty() ? heads_[0]->K : trunk_[0]->K;
  // The merged heads' rows padded to whole vectors of 8: each row one store, where the few
  // columns of a logits-and-value pair were a libc memcpy per row (gemm.cc).
  const int64_t cols = merged() ? (merged_.N + 7) / 8 * 8 : 0;
  // This thread's tile buffers, grown once: two for the trunk, one for the merged heads, each
  // from a 64-byte boundary, so that a tile's vector stores do not straddle two cache lines
  // (the vector's own start was 48 bytes past one; ep/bench/mlp_layers.cc, its buffers so placed
  // and 48 bytes past, three pairs: 29.3-29.6 against 29.6-30.0 µs at 256 rows, 474.9-476.2
  // against 476.8-486.7 at 4,096).
  thread_local std::vector<float> scratch;
  const int64_t part = (tile_ * width_ + 15) / 16 * 16;
  const size_t need = static_cast<size_t>(2 * part + tile_ * cols + 16);
  if (scratch.size() < need) scratch.resize(need);
  float* base = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t{63});
  float* buf[2] = {base, base + part};
  float* hb = base + 2 * part;
  for (int64_t mt = m0; mt < m1; mt += tile_) {
    const int64_t n = std::min(tile_, m1 - mt);
    const float* src = x + mt * k0;
    int64_t lda = k0;
    for (size_t l = 0; l < trunk_.size(); l++) {
      const DenseKernel& d = *trunk_[l];
      float* dst = buf[l % 2];
      Gemm(src, lda, n, d.packed, 0, d.N, EpilogueOf(d), dst, d.N);
      src = dst;
      lda = d.N;
    }
    if (merged()) {
      Gemm(src, lda, n, merged_, 0, cols, merged_epi_, hb, cols);
      // Each head's columns to its output: a head of a few floats (a value, a handful of
      // logits) by a loop compiled for its width, where a libc call per row cost about 2% of
      // the narrow MLP at 256 rows, and a loop over a width known only at run time copied the
      // narrow MLP's 4,096 rows of logits and value in 7.9 µs, 3.4 compiled per width); wider
      // ones by memcpy.
      for (size_t h = 0; h < heads_.size(); h++) {
        const int64_t N = heads_[h]->N;
        float* o = outs[h] + mt * N;
        const float* src = hb + col_[h];
        if (N < 8) {
          switch (N) {
#define ONNXRL_COPY_COLS(C)             \
  case C:                               \
    CopyCols<C>(src, cols, n, o);       \
    break;
            ONNXRL_COPY_COLS(1)
            ONNXRL_COPY_COLS(2)
            ONNXRL_COPY_COLS(3)
            ONNXRL_COPY_COLS(4)
            ONNXRL_COPY_COLS(5)
            ONNXRL_COPY_COLS(6)
            ONNXRL_COPY_COLS(7)
#undef ONNXRL_COPY_COLS
            default:
              break;
          }
        } else {
          for (int64_t r = 0; r < n; r++) std::memcpy(o + r * N, src + r * cols, N * sizeof(float));
        }
      }
    } else {
      for (size_t h = 0; h < heads_.size(); h++) {
        const DenseKernel& d = *heads_[h];
        Gemm(src, lda, n, d.packed, 0, d.N, EpilogueOf(d), outs[h] + mt * d.N, d.N);
      }
    }
  }
}

void HostDenseGroup::TilesFm(const float* x, int64_t m0, int64_t m1, float* const* outs) const {
#if defined(ONNXRL_X86_ISAS)
  const int64_t k0 = fm_.front().K;
  const FmLayer& hd = fm_.back();
  // This thread's buffers, grown once, from a 64-byte boundary: the tile's input transposed,
  // two for the trunk and one for the heads, each fm_tile_ floats per feature (a multiple of 64).
  thread_local std::vector<float> scratch;
  const size_t need = static_cast<size_t>(fm_tile_ * (k0 + 2 * width_ + hd.N) + 16);
  if (scratch.size() < need) scratch.resize(need);
  float* xT = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t{63});
  float* buf[2] = {xT + fm_tile_ * k0, xT + fm_tile_ * (k0 + width_)};
  float* hb = xT + fm_tile_ * (k0 + 2 * width_);
  for (int64_t mt = m0; mt < m1; mt += fm_tile_) {
    const int64_t n = std::min(fm_tile_, m1 - mt);
    const int64_t T = (n + 63) / 64 * 64;  // rows n to T are zeros and never stored
    FmTransposeIn(x + mt * k0, k0, n, T, xT);
    const float* src = xT;
    for (size_t l = 0; l + 1 < fm_.size(); l++) {
      const FmLayer& d = fm_[l];
      FmRun<2>(src, T, d.K, d.N, d.w.data(), d.bias.data(), d.e, buf[l % 2]);
      src = buf[l % 2];
    }
    FmRun<4>(src, T, hd.K, hd.N, hd.w.data(), hd.bias.data(), hd.e, hb);
    // Each head's columns to its rows: a value (one column) is one row of hb; 2, 4 or 8
    // columns by FmStoreRows; others element by element.
    for (size_t h = 0; h < heads_.size(); h++) {
      const int64_t N = heads_[h]->N;
      const float* src_h = hb + col_[h] * T;
      float* o = outs[h] + mt * N;
      if (N == 1) {
        std::memcpy(o, src_h, n * sizeof(float));
      } else if (N == 2) {
        FmStoreRows<2>(src_h, T, n, o);
      } else if (N == 4) {
        FmStoreRows<4>(src_h, T, n, o);
      } else if (N == 8) {
        FmStoreRows<8>(src_h, T, n, o);
      } else {
        for (int64_t r = 0; r < n; r++)
          for (int64_t j = 0; j < N; j++) o[r * N + j] = src_h[j * T + r];
      }
    }
  }
#else
  (void)x, (void)m0, (void)m1, (void)outs;
#endif
}

void HostDenseGroup::Run(ExecContext& c) const {
  const float* x = c.CF(in_);
  constexpr size_t kMaxHeads = 8;
  float* outs[kMaxHeads];
  for (size_t h = 0; h < heads_.size(); h++) outs[h] = c.F(heads_[h]->out[0]);
  const int64_t M = MatrixRows(c.shape(in_));
  if (!feature_major() || M < kFmMinRows) {
    c.ParallelRows(M, macs_, [&](int64_t m0, int64_t m1) { Tiles(x, m0, m1, outs); });
    return;
  }
  // Tasks of whole tiles: ParallelRows' tasks of TaskRows rows (256 rows: four of 64) made the
  // tiles that small.
  const int64_t rows = (std::max(TaskRows(macs_, M, 8), fm_tile_) + fm_tile_ - 1) / fm_tile_ * fm_tile_;
  auto task = [&](size_t t) {
    const int64_t m0 = static_cast<int64_t>(t) * rows;
    TilesFm(x, m0, std::min(M, m0 + rows), outs);
  };
  c.ParallelFor(static_cast<size_t>((M + rows - 1) / rows), task);
}

}  // namespace onnxrl_ep
