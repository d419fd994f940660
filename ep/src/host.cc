#include "host.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "gemm.h"

namespace onnxrl_ep {

namespace {

// ONNXRL_VECTOR_CLONES compiles a hot loop for AVX2+FMA too, picked at load time on x86-64.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ONNXRL_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define ONNXRL_VECTOR_CLONES
#endif

// Gemm of rows: out[m][n] += sum_k a[m][k] * w[k][n], n contiguous so the inner loop
// vectorizes. Four rows at a time share each load of w. (Measured: faster here than a 4x16
// register tile, which GCC does not keep in registers.)
ONNXRL_VECTOR_CLONES
void Accumulate(const float* __restrict a, int64_t lda, int64_t M, int64_t K, const float* __restrict w, int64_t N,
                float* __restrict out, int64_t ldo) {
  int64_t m = 0;
  for (; m + 4 <= M; m += 4) {
    float* __restrict o0 = out + (m + 0) * ldo;
    float* __restrict o1 = out + (m + 1) * ldo;
    float* __restrict o2 = out + (m + 2) * ldo;
    float* __restrict o3 = out + (m + 3) * ldo;
    const float* a0 = a + (m + 0) * lda;
    const float* a1 = a + (m + 1) * lda;
    const float* a2 = a + (m + 2) * lda;
    const float* a3 = a + (m + 3) * lda;
    for (int64_t k = 0; k < K; k++) {
      const float* __restrict wk = w + k * N;
      const float x0 = a0[k], x1 = a1[k], x2 = a2[k], x3 = a3[k];
      for (int64_t n = 0; n < N; n++) {
        const float wv = wk[n];
        o0[n] += x0 * wv;
        o1[n] += x1 * wv;
        o2[n] += x2 * wv;
        o3[n] += x3 * wv;
      }
    }
  }
  for (; m < M; m++) {
    float* __restrict o = out + m * ldo;
    const float* am = a + m * lda;
    for (int64_t k = 0; k < K; k++) {
      const float* __restrict wk = w + k * N;
      const float x = am[k];
      for (int64_t n = 0; n < N; n++) o[n] += x * wk[n];
    }
  }
}

}  // namespace

void HostDense(const float* a, int64_t M, int64_t K, const float* w, int64_t N, const float* bias, int32_t act,
               float act_a, float act_b, float* out) {
  // w is packed on every call (a runtime matrix, or a caller without packed weights): O(K N)
  // copies against O(M K N) multiply-adds, into this thread's buffer, grown only when needed.
  thread_local PackedWeights packed;
  packed.Repack(w, K, N, N, bias);
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

int64_t RnnScratch(int64_t gates, int64_t H, int64_t B) {
  // gates [B][G*H], recurrent part [B][G*H] (GRU), h and c [B][H] each.
  return B * gates * H * 2 + 2 * B * H;
}

void HostLstm(const RnnWeights& w, const float* x, int64_t T, int64_t B, const float* h0, const float* c0, float* y,
              float* yh, float* yc, float* scratch) {
  const int64_t H = w.H, G = 4 * H;
  float* gates = scratch;
  float* h = scratch + 2 * B * G;
  float* c = h + B * H;
  if (h0) std::memcpy(h, h0, B * H * sizeof(float)); else std::memset(h, 0, B * H * sizeof(float));
  if (c0) std::memcpy(c, c0, B * H * sizeof(float)); else std::memset(c, 0, B * H * sizeof(float));
  for (int64_t t = 0; t < T; t++) {
    for (int64_t b = 0; b < B; b++)
      for (int64_t g = 0; g < G; g++) gates[b * G + g] = w.bx[g] + w.bh[g];
    Accumulate(x + t * B * w.I, w.I, B, w.I, w.wx, G, gates, G);
    Accumulate(h, H, B, H, w.wh, G, gates, G);
    for (int64_t b = 0; b < B; b++) {
      const float* gr = gates + b * G;
      for (int64_t j = 0; j < H; j++) {
        h[b * H + j] = LstmCell(gr[j], gr[H + j], gr[2 * H + j], gr[3 * H + j], &c[b * H + j]);
      }
    }
    if (y) std::memcpy(y + t * B * H, h, B * H * sizeof(float));
  }
  if (yh) std::memcpy(yh, h, B * H * sizeof(float));
  if (yc) std::memcpy(yc, c, B * H * sizeof(float));
}

void HostGru(const RnnWeights& w, bool lbr, const float* x, int64_t T, int64_t B, const float* h0, float* y,
             float* yh, float* scratch) {
  const int64_t H = w.H, G = 3 * H;
  float* gx = scratch;          // x @ Wx + bx
  float* gh = scratch + B * G;  // h @ Wh + bh (or (r*h) @ Wh_h)
  float* h = scratch + 2 * B * G;
  float* rh = h + B * H;
  if (h0) std::memcpy(h, h0, B * H * sizeof(float)); else std::memset(h, 0, B * H * sizeof(float));
  for (int64_t t = 0; t < T; t++) {
    for (int64_t b = 0; b < B; b++) {
      std::memcpy(gx + b * G, w.bx, G * sizeof(float));
      std::memcpy(gh + b * G, w.bh, G * sizeof(float));
    }
    Accumulate(x + t * B * w.I, w.I, B, w.I, w.wx, G, gx, G);
    if (lbr) {
      Accumulate(h, H, B, H, w.wh, G, gh, G);
      for (int64_t b = 0; b < B; b++) {
        const float* ax = gx + b * G;
        const float* ah = gh + b * G;
        for (int64_t j = 0; j < H; j++) {
          float z = GruGate(ax[j] + ah[j]);
          float r = GruGate(ax[H + j] + ah[H + j]);
          h[b * H + j] = GruOut(z, ax[2 * H + j] + r * ah[2 * H + j], h[b * H + j]);
        }
      }
    } else {
      // z and r from h, then the candidate from (r * h): the last third of Wh separately.
      for (int64_t b = 0; b < B; b++)
        for (int64_t k = 0; k < H; k++) {
          const float hv = h[b * H + k];
          const float* wk = w.wh + k * G;
          float* o = gh + b * G;
          for (int64_t g = 0; g < 2 * H; g++) o[g] += hv * wk[g];
        }
      for (int64_t b = 0; b < B; b++)
        for (int64_t j = 0; j < H; j++) {
          float r = GruGate(gx[b * G + H + j] + gh[b * G + H + j]);
          rh[b * H + j] = r * h[b * H + j];
        }
      for (int64_t b = 0; b < B; b++)
        for (int64_t k = 0; k < H; k++) {
          const float v = rh[b * H + k];
          const float* wk = w.wh + k * G + 2 * H;
          float* o = gh + b * G + 2 * H;
          for (int64_t j = 0; j < H; j++) o[j] += v * wk[j];
        }
      for (int64_t b = 0; b < B; b++)
        for (int64_t j = 0; j < H; j++) {
          float z = GruGate(gx[b * G + j] + gh[b * G + j]);
          h[b * H + j] = GruOut(z, gx[b * G + 2 * H + j] + gh[b * G + 2 * H + j], h[b * H + j]);
        }
    }
    if (y) std::memcpy(y + t * B * H, h, B * H * sizeof(float));
  }
  if (yh) std::memcpy(yh, h, B * H * sizeof(float));
}

}  // namespace onnxrl_ep
