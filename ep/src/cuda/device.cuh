// The CUDA backend's kernels. NVRTC compiles them at first use for the GPU in hand; the build
// puts the text of kernels.h (the element math the host backend runs too) before this file's
// (device_source.cc), then device_args.h's. Every kernel is extern "C" so that the backend finds it by name, and
// loops over its elements grid-stride unless it says otherwise, so any grid size is correct.
//
// The argument structs (Dims, MlpDesc) are in device_args.h, whose text the build puts before
// this file's.

// ONNXRL_DYNAMIC_SMEM declares a kernel's dynamic shared memory (a host emulation of the
// kernels defines it otherwise).
#ifndef ONNXRL_DYNAMIC_SMEM
#define ONNXRL_DYNAMIC_SMEM(name) extern __shared__ float name[]
#endif

namespace onnxrl_ep {
namespace dev {

__device__ inline long long GlobalThread() { return (long long)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ inline long long GridThreads() { return (long long)gridDim.x * blockDim.x; }

}  // namespace dev
}  // namespace onnxrl_ep

using onnxrl_ep::dev::Dims;
using onnxrl_ep::dev::MlpDesc;

// out[i] = act(in[i])
extern "C" __global__ void onnxrl_unary(const float* in, float* out, long long n, int act, float a, float b) {
  for (long long i = onnxrl_ep::dev::GlobalThread(); i < n; i += onnxrl_ep::dev::GridThreads())
    out[i] = onnxrl_ep::ApplyAct(act, in[i], a, b);
}

// out[i] = a[..] op b[..] over out's dims, each input read through its broadcast strides.
extern "C" __global__ void onnxrl_binary(const float* a, const float* b, float* out, long long n, int rank, int op,
                                         Dims dims, Dims sa, Dims sb) {
  for (long long i = onnxrl_ep::dev::GlobalThread(); i < n; i += onnxrl_ep::dev::GridThreads()) {
    long long rem = i, oa = 0, ob = 0;
    for (int d = rank - 1; d >= 0; d--) {
      long long q = rem % dims.d[d];
      rem /= dims.d[d];
      oa += q * sa.d[d];
      ob += q * sb.d[d];
    }
    out[i] = onnxrl_ep::ApplyBin(op, a[oa], b[ob]);
  }
}

// out[i...] = in[base + sum(i[d] * strides[d])] over out's dims (Transpose, Slice).
extern "C" __global__ void onnxrl_strided(const float* in, long long base, float* out, long long n, int rank,
                                          Dims dims, Dims strides) {
  for (long long i = onnxrl_ep::dev::GlobalThread(); i < n; i += onnxrl_ep::dev::GridThreads()) {
    long long rem = i, off = base;
    for (int d = rank - 1; d >= 0; d--) {
      long long q = rem % dims.d[d];
      rem /= dims.d[d];
      off += q * strides.d[d];
    }
    out[i] = in[off];
  }
}

// dst[r * dpitch + c] = src[r * spitch + c] (Concat, Split, Gather: blocks of rows).
extern "C" __global__ void onnxrl_copy2d(const float* src, long long spitch, float* dst, long long dpitch,
                                         long long rows, long long cols) {
  long long n = rows * cols;
  for (long long i = onnxrl_ep::dev::GlobalThread(); i < n; i += onnxrl_ep::dev::GridThreads()) {
    long long r = i / cols, c = i % cols;
    dst[r * dpitch + c] = src[r * spitch + c];
  }
}

extern "C" __global__ void onnxrl_fill(float* out, long long n, float v) {
  for (long long i = onnxrl_ep::dev::GlobalThread(); i < n; i += onnxrl_ep::dev::GridThreads()) out[i] = v;
}

// Softmax or LogSoftmax along the middle of [outer, len, inner]: one thread per row.
extern "C" __global__ void onnxrl_softmax(const float* in, float* out, long long outer, long long len,
                                          long long inner, int log) {
  long long rows = outer * inner;
  for (long long i = onnxrl_ep::dev::GlobalThread(); i < rows; i += onnxrl_ep::dev::GridThreads()) {
    long long o = i / inner, j = i % inner;
    const float* x = in + o * len * inner + j;
    float* y = out + o * len * inner + j;
    float mx = -INFINITY;
    for (long long k = 0; k < len; k++) mx = fmaxf(mx, x[k * inner]);
    float sum = 0.0f;
    for (long long k = 0; k < len; k++) sum += expf(x[k * inner] - mx);
    if (log) {
      float ls = logf(sum);
      for (long long k = 0; k < len; k++) y[k * inner] = x[k * inner] - mx - ls;
    } else {
      for (long long k = 0; k < len; k++) y[k * inner] = expf(x[k * inner] - mx) / sum;
    }
  }
}

// onnxrl_gemm: out[m][n] = act(sum_k a[m][k] w[k][n] + bias[n] + (accum ? out[m][n] : 0)) for
// m < M, n < N, with row pitches lda, ldw, ldo. A block of 256 threads computes a 64x64 tile
// of out, each thread 4 rows by 4 columns (columns 16 apart, so that a warp's loads and stores
// are contiguous), over K in steps of 16 staged in shared memory.
// Grid: (ceil(N / 64), ceil(M / 64)); block: 256.
#define ONNXRL_GEMM_TILE 64
#define ONNXRL_GEMM_TK 16
extern "C" __global__ void __launch_bounds__(256)
    onnxrl_gemm(const float* __restrict__ a, long long lda, const float* __restrict__ w, long long ldw,
                const float* __restrict__ bias, float* out, long long ldo, int M, int N, int K, int accum, int act,
                float pa, float pb) {
  __shared__ float as[ONNXRL_GEMM_TK][ONNXRL_GEMM_TILE + 4];  // as[k][m]: a transposed
  __shared__ float ws[ONNXRL_GEMM_TK][ONNXRL_GEMM_TILE];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const long long m0 = (long long)blockIdx.y * ONNXRL_GEMM_TILE;
  const int n0 = blockIdx.x * ONNXRL_GEMM_TILE;
  float acc[4][4];
  for (int r = 0; r < 4; r++)
    for (int c = 0; c < 4; c++) acc[r][c] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += ONNXRL_GEMM_TK) {
    for (int i = threadIdx.x; i < ONNXRL_GEMM_TILE * ONNXRL_GEMM_TK; i += 256) {
      int mm = i / ONNXRL_GEMM_TK, kk = i % ONNXRL_GEMM_TK;
      long long gm = m0 + mm;
      int gk = k0 + kk;
      as[kk][mm] = (gm < M && gk < K) ? a[gm * lda + gk] : 0.0f;
    }
    for (int i = threadIdx.x; i < ONNXRL_GEMM_TILE * ONNXRL_GEMM_TK; i += 256) {
      int kk = i / ONNXRL_GEMM_TILE, nn = i % ONNXRL_GEMM_TILE;
      int gk = k0 + kk, gn = n0 + nn;
      ws[kk][nn] = (gk < K && gn < N) ? w[(long long)gk * ldw + gn] : 0.0f;
    }
    __syncthreads();
    for (int kk = 0; kk < ONNXRL_GEMM_TK; kk++) {
      float av[4], wv[4];
      for (int r = 0; r < 4; r++) av[r] = as[kk][ty * 4 + r];
      for (int c = 0; c < 4; c++) wv[c] = ws[kk][tx + 16 * c];
      for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++) acc[r][c] += av[r] * wv[c];
    }
    __syncthreads();
  }
  for (int r = 0; r < 4; r++) {
    long long gm = m0 + ty * 4 + r;
    if (gm >= M) continue;
    for (int c = 0; c < 4; c++) {
      int gn = n0 + tx + 16 * c;
      if (gn >= N) continue;
      float v = acc[r][c];
      if (bias != nullptr) v += bias[gn];
      if (accum) v += out[gm * ldo + gn];
      out[gm * ldo + gn] = onnxrl_ep::ApplyAct(act, v, pa, pb);
    }
  }
}

// MlpLayer: out[r][j] = act(sum_k src[r][k] w[k][j] + bias[j]) for r < rows (a multiple of
// 4 rows is computed; those past rows are written only when out is shared memory), each
// thread 4 rows of one column at a time. (A 4x4 tile per thread with 16-byte loads measured
// no faster on an H200: 109 against 111 us for the MLP at batch 65,536.)
__device__ inline void MlpLayer(const float* __restrict__ src, int K, int N, const float* __restrict__ w,
                                const float* __restrict__ bias, int act, float pa, float pb, float* __restrict__ o,
                                int rows, bool global) {
  const int groups = (rows + 3) / 4;
  for (int idx = threadIdx.x; idx < groups * N; idx += blockDim.x) {
    const int j = idx % N, r = (idx / N) * 4;
    const float b0 = bias != nullptr ? bias[j] : 0.0f;
    float a0 = b0, a1 = b0, a2 = b0, a3 = b0;
    const float* s = src + r * K;
    for (int k = 0; k < K; k++) {
      const float wv = __ldg(w + k * N + j);
      a0 += s[k] * wv;
      a1 += s[K + k] * wv;
      a2 += s[2 * K + k] * wv;
      a3 += s[3 * K + k] * wv;
    }
    o[r * N + j] = onnxrl_ep::ApplyAct(act, a0, pa, pb);
    if (r + 1 < rows || !global) o[(r + 1) * N + j] = onnxrl_ep::ApplyAct(act, a1, pa, pb);
    if (r + 2 < rows || !global) o[(r + 2) * N + j] = onnxrl_ep::ApplyAct(act, a2, pa, pb);
    if (r + 3 < rows || !global) o[(r + 3) * N + j] = onnxrl_ep::ApplyAct(act, a3, pa, pb);
  }
}

// onnxrl_mlp: a policy's dense layers in one kernel. A block owns d.rows rows (a multiple of
// 4) and carries them through the trunk in shared memory (two buffers of d.rows x d.width
// floats, passed as the dynamic shared size); weights are read through the L1/L2 caches, bias
// and activation applied in registers. Only the heads write to global memory.
// Grid: ceil(M / d.rows); block: 256; dynamic shared memory: 2 * d.rows * d.width floats.
extern "C" __global__ void __launch_bounds__(256) onnxrl_mlp(const float* __restrict__ in, int M, MlpDesc d) {
  ONNXRL_DYNAMIC_SMEM(onnxrl_smem);
  float* src = onnxrl_smem;
  float* dst = onnxrl_smem + d.rows * d.width;
  const long long r0 = (long long)blockIdx.x * d.rows;
  const int rows = (int)(M - r0 < d.rows ? M - r0 : d.rows);
  const int k0 = d.k[0];
  for (int i = threadIdx.x; i < d.rows * k0; i += blockDim.x) src[i] = i < rows * k0 ? in[r0 * k0 + i] : 0.0f;
  __syncthreads();
  const int trunk = d.layers - d.heads;
  for (int l = 0; l < trunk; l++) {
    MlpLayer(src, d.k[l], d.n[l], d.w[l], d.bias[l], d.act[l], d.a[l], d.b[l], dst, rows, false);
    __syncthreads();
    float* t = src;
    src = dst;
    dst = t;
  }
  for (int h = 0; h < d.heads; h++) {
    const int l = trunk + h;
    MlpLayer(src, d.k[l], d.n[l], d.w[l], d.bias[l], d.act[l], d.a[l], d.b[l], d.out[h] + r0 * d.n[l], rows, true);
  }
}

// LSTM: one time step's cell over [B, H], gates [B, 4H] in ONNX order i, o, f, c with both
// biases and both products summed. Reads c_prev, writes c_out and h_out (c_out may be c_prev);
// y (this step's slice of Y) may be null.
extern "C" __global__ void onnxrl_lstm_cell(const float* gates, const float* c_prev, float* c_out, float* h_out,
                                            float* y, long long B, int H) {
  long long n = B * H;
  for (long long i = onnxrl_ep::dev::GlobalThread(); i < n; i += onnxrl_ep::dev::GridThreads()) {
    long long b = i / H;
    int j = (int)(i % H);
    const float* g = gates + b * 4 * H;
    float cv = c_prev[i];
    float hv = onnxrl_ep::LstmCell(g[j], g[H + j], g[2 * H + j], g[3 * H + j], &cv);
    c_out[i] = cv;
    h_out[i] = hv;
    if (y != nullptr) y[i] = hv;
  }
}

// LstmGateSums adds src's rows row[0..3] (of K values) times w (K x G, the four gates' columns
// j, H + j, 2H + j, 3H + j) to acc[row][gate].
__device__ inline void LstmGateSums(float (&acc)[4][4], const float* __restrict__ src, const long long (&row)[4],
                                    int K, const float* __restrict__ w, int G, int H, int j) {
  for (int k = 0; k < K; k++) {
    const float* wk = w + (long long)k * G + j;
    const float w0 = __ldg(wk), w1 = __ldg(wk + H), w2 = __ldg(wk + 2 * H), w3 = __ldg(wk + 3 * H);
    for (int r = 0; r < 4; r++) {
      const float v = src[row[r] * K + k];
      acc[r][0] += v * w0;
      acc[r][1] += v * w1;
      acc[r][2] += v * w2;
      acc[r][3] += v * w3;
    }
  }
}

// onnxrl_lstm_step: one LSTM time step in one kernel, for a step whose new state goes to other
// buffers than the state it reads (the first step: every step of a policy run one at a time).
// gates = x Wx + h_prev Wh + bx + bh (Wx [I, 4H], Wh [H, 4H], gate order i, o, f, c), then the
// cell. A thread owns hidden unit j of 4 rows: 16 sums, each weight read once for the 4 rows.
// Reads x (B x I), h_prev and c_prev (B x H); writes c_out, h_out and y (may be null).
extern "C" __global__ void onnxrl_lstm_step(const float* __restrict__ x, const float* __restrict__ h_prev,
                                            const float* __restrict__ c_prev, const float* __restrict__ wx,
                                            const float* __restrict__ wh, const float* __restrict__ bx,
                                            const float* __restrict__ bh, float* __restrict__ c_out,
                                            float* __restrict__ h_out, float* __restrict__ y, long long B, int I,
                                            int H) {
  const long long n = (B + 3) / 4 * H;
  const int G = 4 * H;
  for (long long idx = onnxrl_ep::dev::GlobalThread(); idx < n; idx += onnxrl_ep::dev::GridThreads()) {
    const int j = (int)(idx % H);
    const long long r0 = idx / H * 4;
    // Rows past B read the last row again (and are not written).
    long long row[4];
    for (int r = 0; r < 4; r++) row[r] = r0 + r < B ? r0 + r : B - 1;
    float acc[4][4];
    for (int g = 0; g < 4; g++) {
      const float b = bx[g * H + j] + bh[g * H + j];
      for (int r = 0; r < 4; r++) acc[r][g] = b;
    }
    LstmGateSums(acc, x, row, I, wx, G, H, j);
    LstmGateSums(acc, h_prev, row, H, wh, G, H, j);
    for (int r = 0; r < 4 && r0 + r < B; r++) {
      const long long i = (r0 + r) * H + j;
      float cv = c_prev[i];
      const float hv = onnxrl_ep::LstmCell(acc[r][0], acc[r][1], acc[r][2], acc[r][3], &cv);
      c_out[i] = cv;
      h_out[i] = hv;
      if (y != nullptr) y[i] = hv;
    }
  }
}

// GRU with linear_before_reset: gx = x Wx + bx, gh = h Wh + bh, both [B, 3H] (z, r, n). Reads
// h_prev, writes h_out (which may be h_prev) and y (may be null).
extern "C" __global__ void onnxrl_gru_lbr(const float* gx, const float* gh, const float* h_prev, float* h_out,
                                          float* y, long long B, int H) {
  long long n = B * H;
  for (long long i = onnxrl_ep::dev::GlobalThread(); i < n; i += onnxrl_ep::dev::GridThreads()) {
    long long b = i / H;
    int j = (int)(i % H);
    const float* ax = gx + b * 3 * H;
    const float* ah = gh + b * 3 * H;
    float z = onnxrl_ep::GruGate(ax[j] + ah[j]);
    float r = onnxrl_ep::GruGate(ax[H + j] + ah[H + j]);
    float hv = onnxrl_ep::GruOut(z, ax[2 * H + j] + r * ah[2 * H + j], h_prev[i]);
    h_out[i] = hv;
    if (y != nullptr) y[i] = hv;
  }
}

// GRU (default form), first half: rh = sigmoid(r) * h_prev, with r's sums from gx and gh.
extern "C" __global__ void onnxrl_gru_reset(const float* gx, const float* gh, const float* h_prev, float* rh,
                                            long long B, int H) {
  long long n = B * H;
  for (long long i = onnxrl_ep::dev::GlobalThread(); i < n; i += onnxrl_ep::dev::GridThreads()) {
    long long b = i / H;
    int j = (int)(i % H);
    float r = onnxrl_ep::GruGate(gx[b * 3 * H + H + j] + gh[b * 3 * H + H + j]);
    rh[i] = r * h_prev[i];
  }
}

// GRU (default form), second half: the new h from z and the candidate's sums (gh's last third
// holds (r * h) Wh_n + bh_n by now). Reads h_prev, writes h_out (may be h_prev) and y.
extern "C" __global__ void onnxrl_gru_out(const float* gx, const float* gh, const float* h_prev, float* h_out,
                                          float* y, long long B, int H) {
  long long n = B * H;
  for (long long i = onnxrl_ep::dev::GlobalThread(); i < n; i += onnxrl_ep::dev::GridThreads()) {
    long long b = i / H;
    int j = (int)(i % H);
    const float* ax = gx + b * 3 * H;
    const float* ah = gh + b * 3 * H;
    float z = onnxrl_ep::GruGate(ax[j] + ah[j]);
    float hv = onnxrl_ep::GruOut(z, ax[2 * H + j] + ah[2 * H + j], h_prev[i]);
    h_out[i] = hv;
    if (y != nullptr) y[i] = hv;
  }
}

// onnxrl_conv: a 2-D NCHW convolution, one thread per output element, direct (the window's
// products summed in registers). geo = {N, C, H, W, OC, OH, OW, group}; k = {KH, KW, sh, sw, pt,
// pl, dh, dw}; w [OC][C/group][KH][KW]; bias [OC] or null.
extern "C" __global__ void onnxrl_conv(const float* __restrict__ x, const float* __restrict__ w,
                                       const float* __restrict__ bias, float* out, long long n, Dims geo, Dims k) {
  const long long C = geo.d[1], H = geo.d[2], W = geo.d[3], OC = geo.d[4], OH = geo.d[5], OW = geo.d[6];
  const long long Cg = C / geo.d[7], OCg = OC / geo.d[7];
  const int KH = (int)k.d[0], KW = (int)k.d[1];
  for (long long i = onnxrl_ep::dev::GlobalThread(); i < n; i += onnxrl_ep::dev::GridThreads()) {
    const long long ow = i % OW, oh = (i / OW) % OH, oc = (i / (OW * OH)) % OC, b = i / (OW * OH * OC);
    const long long h0 = oh * k.d[2] - k.d[4], w0 = ow * k.d[3] - k.d[5];
    const float* xg = x + (b * C + (oc / OCg) * Cg) * H * W;
    const float* wo = w + oc * Cg * KH * KW;
    float acc = bias != nullptr ? bias[oc] : 0.0f;
    for (long long c = 0; c < Cg; c++) {
      const float* xc = xg + c * H * W;
      const float* wc = wo + c * KH * KW;
      for (int kh = 0; kh < KH; kh++) {
        const long long ih = h0 + kh * k.d[6];
        if (ih < 0 || ih >= H) continue;
        for (int kw = 0; kw < KW; kw++) {
          const long long iw = w0 + kw * k.d[7];
          if (iw >= 0 && iw < W) acc += xc[ih * W + iw] * wc[kh * KW + kw];
        }
      }
    }
    out[i] = acc;
  }
}

// onnxrl_pool: MaxPool or AveragePool over 2-D planes, one thread per output element. geo =
// {planes, H, W, OH, OW, max, count_include_pad}; k as onnxrl_conv's. An average divides by the
// window's elements within the input, or with count_include_pad by the kernel's size.
extern "C" __global__ void onnxrl_pool(const float* __restrict__ x, float* out, long long n, Dims geo, Dims k) {
  const long long H = geo.d[1], W = geo.d[2], OH = geo.d[3], OW = geo.d[4];
  const int KH = (int)k.d[0], KW = (int)k.d[1];
  for (long long i = onnxrl_ep::dev::GlobalThread(); i < n; i += onnxrl_ep::dev::GridThreads()) {
    const long long ow = i % OW, oh = (i / OW) % OH, p = i / (OW * OH);
    const float* xp = x + p * H * W;
    const long long h0 = oh * k.d[2] - k.d[4], w0 = ow * k.d[3] - k.d[5];
    if (geo.d[5]) {
      float m = -3.402823466e+38f;
      for (int kh = 0; kh < KH; kh++) {
        const long long ih = h0 + kh * k.d[6];
        if (ih < 0 || ih >= H) continue;
        for (int kw = 0; kw < KW; kw++) {
          const long long iw = w0 + kw * k.d[7];
          if (iw >= 0 && iw < W) m = fmaxf(m, xp[ih * W + iw]);
        }
      }
      out[i] = m;
    } else {
      const long long hs = h0 > 0 ? h0 : 0, he = h0 + KH < H ? h0 + KH : H;
      const long long ws = w0 > 0 ? w0 : 0, we = w0 + KW < W ? w0 + KW : W;
      float sum = 0.0f;
      for (long long ih = hs; ih < he; ih++)
        for (long long iw = ws; iw < we; iw++) sum += xp[ih * W + iw];
      const long long valid = (he - hs) * (we - ws);
      const long long count = geo.d[6] ? (long long)KH * KW : (valid > 0 ? valid : 0);
      out[i] = count > 0 ? sum / (float)count : 0.0f;
    }
  }
}

// onnxrl_layernorm: rows of len values normalized (mean, variance by two passes), scaled and
// shifted (bias may be null); one thread per row.
extern "C" __global__ void onnxrl_layernorm(const float* __restrict__ x, const float* __restrict__ scale,
                                            const float* __restrict__ bias, float* y, long long rows, long long len,
                                            float eps) {
  for (long long r = onnxrl_ep::dev::GlobalThread(); r < rows; r += onnxrl_ep::dev::GridThreads()) {
    const float* xr = x + r * len;
    float* yr = y + r * len;
    double sum = 0;
    for (long long i = 0; i < len; i++) sum += xr[i];
    const double mean = sum / (double)len;
    double sq = 0;
    for (long long i = 0; i < len; i++) sq += (xr[i] - mean) * (xr[i] - mean);
    const float m = (float)mean;
    const float inv = (float)(1.0 / sqrt(sq / (double)len + eps));
    for (long long i = 0; i < len; i++) yr[i] = (xr[i] - m) * inv * scale[i] + (bias != nullptr ? bias[i] : 0.0f);
  }
}

// onnxrl_reduce_mean: one thread per output element, the mean of its count input elements. odims
// are the output's dims with the reduced ones as 1, rdims the reduced dims with the kept ones as
// 1, istr the input's strides.
extern "C" __global__ void onnxrl_reduce_mean(const float* __restrict__ x, float* out, long long n, int rank,
                                              long long count, Dims odims, Dims rdims, Dims istr) {
  for (long long i = onnxrl_ep::dev::GlobalThread(); i < n; i += onnxrl_ep::dev::GridThreads()) {
    long long rem = i, base = 0;
    for (int d = rank - 1; d >= 0; d--) {
      base += (rem % odims.d[d]) * istr.d[d];
      rem /= odims.d[d];
    }
    double sum = 0;
    for (long long j = 0; j < count; j++) {
      long long r = j, off = base;
      for (int d = rank - 1; d >= 0; d--) {
        off += (r % rdims.d[d]) * istr.d[d];
        r /= rdims.d[d];
      }
      sum += x[off];
    }
    out[i] = (float)(sum / (double)count);
  }
}

// onnxrl_pad: constant padding; begin holds each dimension's leading pad (negative: cropped).
extern "C" __global__ void onnxrl_pad(const float* __restrict__ x, float* out, long long n, int rank, Dims odims,
                                      Dims idims, Dims begin, float value) {
  for (long long i = onnxrl_ep::dev::GlobalThread(); i < n; i += onnxrl_ep::dev::GridThreads()) {
    long long rem = i, off = 0, stride = 1;
    bool inside = true;
    for (int d = rank - 1; d >= 0; d--) {
      const long long q = rem % odims.d[d] - begin.d[d];
      rem /= odims.d[d];
      inside = inside && q >= 0 && q < idims.d[d];
      off += q * stride;
      stride *= idims.d[d];
    }
    out[i] = inside ? x[off] : value;
  }
}
