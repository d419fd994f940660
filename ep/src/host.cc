#include "host.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "gemm.h"

namespace onnxrl_ep {

namespace {

// kLstmStrassenRows: HostLstm's rows (of one thread) from which LstmStrassen runs.
constexpr int64_t kLstmStrassenRows = 16;

// ONNXRL_VECTOR_CLONES compiles a hot loop for AVX2+FMA too, picked at load time on x86-64.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ONNXRL_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define ONNXRL_VECTOR_CLONES
#endif

}  // namespace

void HostDense(const float* a, int64_t M, int64_t K, const float* w, int64_t N, const float* bias, int32_t act,
               float act_a, float act_b, float* out) {
  // Packed on every call: the kernels pack their constant weights once (PrepareHost); this is
  // the reference the tests compare other paths with.
  const PackedWeights packed = PackedWeights::Pack(w, K, N, N, bias);
  Epilogue e;
  e.act = act;
  e.a = act_a;
  e.b = act_b;
  Gemm(a, K, M, packed, 0, N, e, out, N);
}

void HostBinary(int32_t op, const float* a, const float* b, float* out, const int64_t* dims, const int64_t* sa,
                const int64_t* sb, int rank) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= dims[d];
  if (n == 0) return;
  // The innermost dimension runs as a plain loop; the rest as an odometer.
  int64_t inner = rank > 0 ? dims[rank - 1] : 1;
  int64_t ia = rank > 0 ? sa[rank - 1] : 0, ib = rank > 0 ? sb[rank - 1] : 0;
  int64_t idx[kMaxRank] = {0};
  int64_t offa = 0, offb = 0;
  for (int64_t o = 0; o < n; o += inner) {
    const float* pa = a + offa;
    const float* pb = b + offb;
    float* po = out + o;
    if (ia == 1 && ib == 1) {
      for (int64_t i = 0; i < inner; i++) po[i] = ApplyBin(op, pa[i], pb[i]);
    } else if (ia == 1 && ib == 0) {
      float y = pb[0];
      for (int64_t i = 0; i < inner; i++) po[i] = ApplyBin(op, pa[i], y);
    } else {
      for (int64_t i = 0; i < inner; i++) po[i] = ApplyBin(op, pa[i * ia], pb[i * ib]);
    }
    for (int d = rank - 2; d >= 0; d--) {
      idx[d]++;
      offa += sa[d];
      offb += sb[d];
      if (idx[d] < dims[d]) break;
      offa -= sa[d] * dims[d];
      offb -= sb[d] * dims[d];
      idx[d] = 0;
    }
  }
}

ONNXRL_VECTOR_CLONES
void NormalizeRow(const float* x, int64_t len, float epsilon, const float* scale, const float* bias, float* y) {
  constexpr int L = 16;
  float part[L] = {0};
  int64_t i = 0;
  for (; i + L <= len; i += L)
    for (int j = 0; j < L; j++) part[j] += x[i + j];
  float sum = 0.0f;
  for (; i < len; i++) sum += x[i];
  for (int j = 0; j < L; j++) sum += part[j];
  const float mean = sum / static_cast<float>(len);
  float sq[L] = {0};
  for (i = 0; i + L <= len; i += L)
    for (int j = 0; j < L; j++) sq[j] += (x[i + j] - mean) * (x[i + j] - mean);
  float var = 0.0f;
  for (; i < len; i++) var += (x[i] - mean) * (x[i] - mean);
  for (int j = 0; j < L; j++) var += sq[j];
  const float inv = 1.0f / std::sqrt(var / static_cast<float>(len) + epsilon);
  if (bias != nullptr) {
    for (i = 0; i < len; i++) y[i] = (x[i] - mean) * inv * scale[i] + bias[i];
  } else {
    for (i = 0; i < len; i++) y[i] = (x[i] - mean) * inv * scale[i];
  }
}

void HostUnary(int32_t act, float a, float b, const float* in, float* out, int64_t n) {
  Epilogue e;
  e.act = act;
  e.a = a;
  e.b = b;
  Activations(e, in, out, n);
}

void HostSoftmax(bool log, const float* in, float* out, int64_t outer, int64_t len, int64_t inner) {
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t j = 0; j < inner; j++) {
      const float* x = in + o * len * inner + j;
      float* y = out + o * len * inner + j;
      float mx = -INFINITY;
      for (int64_t i = 0; i < len; i++) mx = std::max(mx, x[i * inner]);
      float sum = 0.0f;
      for (int64_t i = 0; i < len; i++) sum += expf(x[i * inner] - mx);
      if (log) {
        float ls = logf(sum);
        for (int64_t i = 0; i < len; i++) y[i * inner] = x[i * inner] - mx - ls;
      } else {
        for (int64_t i = 0; i < len; i++) y[i * inner] = expf(x[i * inner] - mx) / sum;
      }
    }
  }
}

void HostStridedCopy(const float* in, int64_t base, const int64_t* dims, const int64_t* strides, int rank,
                     float* out) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= dims[d];
  if (n == 0) return;
  int64_t idx[kMaxRank] = {0};
  int64_t off = base;
  for (int64_t o = 0; o < n; o++) {
    out[o] = in[off];
    for (int d = rank - 1; d >= 0; d--) {
      idx[d]++;
      off += strides[d];
      if (idx[d] < dims[d]) break;
      off -= strides[d] * dims[d];
      idx[d] = 0;
    }
  }
}

void RnnPack(const RnnWeights& w, bool lstm, bool lbr, PackedWeights* x, PackedWeights* h, PackedWeights* hn) {
  const int64_t I = w.I, H = w.H, G = (lstm ? 4 : 3) * H;
  if (lstm) {
    std::vector<float> bias(G), stacked((I + H) * G);
    for (int64_t g = 0; g < G; g++) bias[g] = w.bx[g] + w.bh[g];
    std::copy_n(w.wx, I * G, stacked.data());
    std::copy_n(w.wh, H * G, stacked.data() + I * G);
    x->Repack(stacked.data(), I + H, G, G, bias.data());
    if (LstmStrassenFits(I, H)) PackLstmStrassen(w, h);
    return;
  }
  x->Repack(w.wx, I, G, G, w.bx);
  if (lbr) {
    h->Repack(w.wh, H, G, G, w.bh);
  } else {
    h->Repack(w.wh, H, 2 * H, G, w.bh);
    hn->Repack(w.wh + 2 * H, H, H, G, w.bh + 2 * H);
  }
}

namespace {

// RawPacks holds the packed forms of weights without them (a caller that did not prepare any:
// tests); empty, and allocating nothing, for prepared ones.
struct RawPacks {
  PackedWeights x, h, hn;
  // Of returns w with its packed forms: w's own, or packed now into these.
  RnnWeights Of(const RnnWeights& w, bool lstm, bool lbr) {
    if (w.x != nullptr) return w;
    RnnPack(w, lstm, lbr, &x, &h, &hn);
    RnnWeights p = w;
    p.x = &x;
    p.h = &h;
    p.hn = &hn;
    return p;
  }
};

// Rows [b0, b1) of a batch of B rows of n floats each.
struct RowRange {
  int64_t b0, rows, B;
  float* of(float* base, int64_t n) const { return base + b0 * n; }
  const float* of(const float* base, int64_t n) const { return base == nullptr ? nullptr : base + b0 * n; }
};

// LstmRowScratch is an LSTM row's part of the gates' scratch: its gates (4H), or
// LstmStrassen's scratch per row where that is more.
int64_t LstmRowScratch(int64_t I, int64_t H) { return std::max(4 * H, LstmStrassenRowScratch(I, H)); }

}  // namespace

int64_t RnnScratch(int64_t gates, int64_t I, int64_t H, int64_t B) {
  // GRU: gates [B][G*H], the recurrent part [B][G*H], h and r * h [B][H] each. LSTM: the gates
  // or LstmStrassen's scratch [B][LstmRowScratch], h and c [B][H] each (the state when the
  // caller wants no Y_h or Y_c).
  if (gates == 4) return B * (LstmRowScratch(I, H) + 2 * H);
  return B * (gates * H * 2 + 2 * H);
}

void HostLstm(const RnnWeights& raw, const float* x, int64_t T, int64_t B, const float* h0, const float* c0, float* y,
              float* yh, float* yc, float* scratch, int64_t b0, int64_t b1) {
  if (b1 < 0) b1 = B;
  const RowRange rr{b0, b1 - b0, B};
  RawPacks packs;
  const RnnWeights w = packs.Of(raw, true, false);
  const int64_t H = w.H, G = 4 * H, I = w.I, n = rr.rows, RS = LstmRowScratch(I, H);
  float* gates = rr.of(scratch, RS);
  // The state is read where it is (h0 and c0; zeros when absent) and written where it goes
  // (yh and yc; scratch when absent), the cells updating it there from the second step on: no
  // copies in or out. The first step's multiply has read all of h before the cells write, so h0
  // may be yh and c0 yc (a direction continuing from the state it wrote, ops/rnn.cc).
  float* hs = yh != nullptr ? rr.of(yh, H) : rr.of(scratch + B * RS, H);
  float* cs = yc != nullptr ? rr.of(yc, H) : rr.of(scratch + B * RS + B * H, H);
  const float* h = rr.of(h0, H);
  const float* c = rr.of(c0, H);
  if (h == nullptr) {
    std::memset(hs, 0, n * H * sizeof(float));
    h = hs;
  }
  if (c == nullptr) {
    std::memset(cs, 0, n * H * sizeof(float));
    c = cs;
  }
  if (T == 0) {  // the outputs are the initial state
    if (h != hs) std::memcpy(hs, h, n * H * sizeof(float));
    if (c != cs) std::memcpy(cs, c, n * H * sizeof(float));
    return;
  }
  const Epilogue none;
  // LstmStrassen from kLstmStrassenRows rows (LstmStrassenFits: w.h is its form).
  const bool strassen = w.h != nullptr && !w.h->empty() && n >= kLstmStrassenRows;
  for (int64_t t = 0; t < T; t++) {
    const float* xt = x + t * B * I + b0 * I;
    float* yt = y != nullptr ? y + t * B * H + b0 * H : nullptr;
    // Rows of 16 by LstmStrassen, the rest as below.
    const int64_t m = strassen ? LstmStrassen(*w.h, I, H, xt, h, c, n, gates, cs, hs, yt) : 0;
    if (m < n) {
      // gates = [x_t, h] @ [Wx; Wh] + (bx + bh): one multiply over I + H (measured 7% faster
      // than x_t @ Wx, then h @ Wh added onto the gates, at 256 rows of 128), its rows read
      // from x_t and h where they are (GemmStacked).
      GemmStacked(xt + m * I, I, I, h + m * H, H, n - m, *w.x, 0, G, none, gates, G);
      LstmCells(gates, n - m, H, c + m * H, cs + m * H, hs + m * H, yt != nullptr ? yt + m * H : nullptr);
    }
    h = hs;
    c = cs;
  }
}

void HostGru(const RnnWeights& raw, bool lbr, const float* x, int64_t T, int64_t B, const float* h0, float* y,
             float* yh, float* scratch, int64_t b0, int64_t b1) {
  if (b1 < 0) b1 = B;
  const RowRange rr{b0, b1 - b0, B};
  RawPacks packs;
  const RnnWeights w = packs.Of(raw, false, lbr);
  const int64_t H = w.H, G = 3 * H, I = w.I, n = rr.rows;
  float* gx = rr.of(scratch, G);          // x @ Wx + bx
  float* gh = rr.of(scratch + B * G, G);  // h @ Wh + bh (or (r*h) @ Wh_n + bh_n)
  float* h = rr.of(scratch + 2 * B * G, H);
  float* rh = rr.of(scratch + 2 * B * G + B * H, H);
  if (h0) std::memcpy(h, rr.of(h0, H), n * H * sizeof(float)); else std::memset(h, 0, n * H * sizeof(float));
  const Epilogue none;
  for (int64_t t = 0; t < T; t++) {
    Gemm(x + t * B * I + b0 * I, I, n, *w.x, 0, G, none, gx, G);
    if (lbr) {
      Gemm(h, H, n, *w.h, 0, G, none, gh, G);
      GruCells(gx, gh, n, H, h);
    } else {
      // z and r from h, then the candidate from (r * h) with Wh's last third.
      Gemm(h, H, n, *w.h, 0, 2 * H, none, gh, G);
      for (int64_t b = 0; b < n; b++)
        for (int64_t j = 0; j < H; j++) rh[b * H + j] = GruGate(gx[b * G + H + j] + gh[b * G + H + j]) * h[b * H + j];
      Gemm(rh, H, n, *w.hn, 0, H, none, gh + 2 * H, G);
      for (int64_t b = 0; b < n; b++)
        for (int64_t j = 0; j < H; j++) {
          float z = GruGate(gx[b * G + j] + gh[b * G + j]);
          h[b * H + j] = GruOut(z, gx[b * G + 2 * H + j] + gh[b * G + 2 * H + j], h[b * H + j]);
        }
    }
    if (y) std::memcpy(y + t * B * H + b0 * H, h, n * H * sizeof(float));
  }
  if (yh) std::memcpy(rr.of(yh, H), h, n * H * sizeof(float));
}

}  // namespace onnxrl_ep
