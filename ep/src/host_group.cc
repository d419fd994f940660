#include "host_group.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "plan.h"

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
  merged_ = PackedWeights::Pack(w.data(), K, cols, cols, bias.data());
  merged_epi_ = EpilogueOf(*heads_[0]);
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

void HostDenseGroup::Run(ExecContext& c) const {
  const float* x = c.CF(in_);
  constexpr size_t kMaxHeads = 8;
  float* outs[kMaxHeads];
  for (size_t h = 0; h < heads_.size(); h++) outs[h] = c.F(heads_[h]->out[0]);
  c.ParallelRows(MatrixRows(c.shape(in_)), macs_, [&](int64_t m0, int64_t m1) { Tiles(x, m0, m1, outs); });
}

}  // namespace onnxrl_ep
