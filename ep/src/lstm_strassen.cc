// An LSTM step's gate multiply by one level of Strassen's algorithm, with the cells fused in
// (host.h, LstmStrassen). Seven half-size products where the ordinary multiply takes eight
// half-size ones: 7/8 of the multiply-adds.
//
// The multiply is C[rows][4H] = A[rows][K] @ W[K][4H], A's row the step's [x_t, h] (K = I + H)
// and W = [Wx; Wh]. Strassen splits each of the three dimensions in two. Rows: a pair of row
// tiles, the first 8 rows of 16 ("top", A1.) and the last 8 ("bottom", A2.). K: the first and
// the second half of [x_t, h] (A.1 and A.2; W's top and bottom halves B1. and B2.). Columns:
// "left" and "right" halves, chosen so that a unit's four gates meet in one tile: for each
// group of 16 units, the left columns are its i and o gates and the right ones its f and c
// (B.1 and B.2; C.1 and C.2). Then
//
//   M1 = (A11 + A22)(B11 + B22)   M2 = (A21 + A22) B11   M3 = A11 (B12 - B22)
//   M4 = A22 (B21 - B11)          M5 = (A11 + A12) B22   M6 = (A21 - A11)(B11 + B12)
//   M7 = (A12 - A22)(B21 + B22)
//   C11 = M1 + M4 - M5 + M7   C12 = M3 + M5   C21 = M2 + M4   C22 = M1 - M2 + M3 + M6
//
// The weights' seven sums are packed once (PackLstmStrassen, summed in double and rounded once)
// as one PackedWeights of K/2 rows by 7 * 2H columns, the seven blocks side by side, each in
// the unit groups' column order. The activations' sums (5 of 8 rows by K/2) are made per pair
// of row tiles, into scratch; the products of a 16-unit group (8 rows by 32 columns, K/2 deep,
// in registers) are added into the four 8 x 32 blocks of C in L1, and once the seventh is in,
// the cells of those 16 rows and 16 units run on them: the gates never go to memory.
#include <algorithm>
#include <cstring>

#include "host.h"
#include "simd.h"

namespace onnxrl_ep {

namespace {

constexpr int64_t kUnits = 16;  // units per column group: 32 columns on each side
constexpr int kMR = 8;          // rows per tile; a pair of tiles is 16 rows
constexpr int64_t kPairRows = 2 * kMR;
constexpr int kProducts = 7;

// Col maps column j of a half (2H columns: groups of 32, i then o on the left, f then c on the
// right) to its column of W (4H: gates i, o, f, c of H units each).
int64_t Col(int64_t j, bool right, int64_t H) {
  const int64_t g = j / (2 * kUnits), s = (j / kUnits) % 2, l = j % kUnits;
  return ((right ? 2 : 0) + s) * H + g * kUnits + l;
}

// Floats of the scratch of one pair of row tiles: the 7 activation sums (8 rows by K/2 each),
// a pair's two whole rows [x_t, h] (2K), and the four blocks of C (8 x 32 each); each part
// rounded to 16 floats (64 bytes).
int64_t Round16(int64_t n) { return (n + 15) / 16 * 16; }
int64_t ScratchFloats(int64_t Kh) {
  return Round16(kProducts * kMR * Kh) + Round16(4 * Kh) + 4 * kMR * 4 * kUnits + 16;
}

}  // namespace

bool LstmStrassenFits(int64_t I, int64_t H) {
  return H > 0 && H % kUnits == 0 && (I + H) % 2 == 0 && ChosenIsa() == IsaLevel::kAvx512;
}

int64_t LstmStrassenRowScratch(int64_t I, int64_t H) {
  return (ScratchFloats((I + H) / 2) + kPairRows - 1) / kPairRows;
}

void PackLstmStrassen(const RnnWeights& w, PackedWeights* s) {
  const int64_t I = w.I, H = w.H, G = 4 * H, K = I + H, Kh = K / 2, N2 = 2 * H;
  auto W = [&](int64_t k, int64_t col) -> double {
    return k < I ? w.wx[k * G + col] : w.wh[(k - I) * G + col];
  };
  // B(k, j, top, right): block B11 (top, left), B12, B21 or B22 at row k and column j.
  auto B = [&](int64_t k, int64_t j, bool top, bool right) { return W(top ? k : Kh + k, Col(j, right, H)); };
  std::vector<float> m(Kh * kProducts * N2);
  for (int64_t k = 0; k < Kh; k++) {
    float* row = m.data() + k * kProducts * N2;
    for (int64_t j = 0; j < N2; j++) {
      const double b11 = B(k, j, true, false), b12 = B(k, j, true, true), b21 = B(k, j, false, false),
                   b22 = B(k, j, false, true);
      const double sums[kProducts] = {b11 + b22, b11, b12 - b22, b21 - b11, b22, b11 + b12, b21 + b22};
      for (int p = 0; p < kProducts; p++) row[p * N2 + j] = static_cast<float>(sums[p]);
    }
  }
  // The bias: the left columns' in block 0's place, the right ones' in block 1's.
  std::vector<float> bias(kProducts * N2, 0.0f);
  for (int64_t j = 0; j < N2; j++) {
    bias[j] = w.bx[Col(j, false, H)] + w.bh[Col(j, false, H)];
    bias[N2 + j] = w.bx[Col(j, true, H)] + w.bh[Col(j, true, H)];
  }
  s->Repack(m.data(), Kh, kProducts * N2, kProducts * N2, bias.data());
}

#if defined(ONNXRL_X86_ISAS)

namespace {

using namespace simd;

#define ONNXRL_INLINE_LAMBDA __attribute__((always_inline))

// Each product's destinations in C (blocks 0 = C11, 1 = C12, 2 = C21, 3 = C22): a block and
// how the product goes in (kSet: the first to arrive, stored; kAdd; kSub), twice (kNone: one).
enum How { kNone, kSet, kAdd, kSub };
struct Dest {
  int block;
  How how;
};
constexpr Dest kDest[kProducts][2] = {
    {{0, kSet}, {3, kSet}},   // M1
    {{2, kSet}, {3, kSub}},   // M2
    {{1, kSet}, {3, kAdd}},   // M3
    {{0, kAdd}, {2, kAdd}},   // M4
    {{0, kSub}, {1, kAdd}},   // M5
    {{3, kAdd}, {0, kNone}},  // M6
    {{0, kAdd}, {0, kNone}},  // M7
};

template <How H>
ONNXRL_ALWAYS_INLINE void Put(const V16* acc, float* block) {
  if constexpr (H == kNone) return;
#pragma GCC unroll 16
  for (int i = 0; i < 2 * kMR; i++) {
    V16 v = acc[i];
    if constexpr (H == kAdd) v = Load<V16>(block + i * 16) + v;
    if constexpr (H == kSub) v = Load<V16>(block + i * 16) - v;
    Store<V16>(block + i * 16, v);
  }
}

// Product P: a (8 rows of Kh floats) times w (two panels of Kh rows of 16, pstride apart), the
// 8 x 32 result put into its blocks of C (each 8 rows of 32 floats). Its own function: its sums
// stay in registers across the K loop (see gemm.cc's row loops).
template <int P>
ONNXRL_TARGET_AVX512 __attribute__((noinline)) void Product(const float* a, int64_t Kh, const float* w,
                                                            int64_t pstride, float* c) {
  V16 acc[2 * kMR];
#pragma GCC unroll 16
  for (int i = 0; i < 2 * kMR; i++) acc[i] = V16{};
  for (int64_t k = 0; k < Kh; k++) {
    const V16 w0 = Load<V16>(w + k * kPanel), w1 = Load<V16>(w + pstride + k * kPanel);
#pragma GCC unroll 8
    for (int r = 0; r < kMR; r++) {
      const float s = a[r * Kh + k];
      acc[2 * r] += s * w0;
      acc[2 * r + 1] += s * w1;
    }
  }
  constexpr int64_t kBlock = kMR * 2 * kUnits;
  Put<kDest[P][0].how>(acc, c + kDest[P][0].block * kBlock);
  Put<kDest[P][1].how>(acc, c + kDest[P][1].block * kBlock);
}

// Sums writes the pair's seven activation sums (8 rows of Kh each, Kh floats apart) into a:
// top and bottom are row r's and row r + 8's whole [x_t, h] (2 Kh floats).
ONNXRL_TARGET_AVX512 void Sums(const float* top, const float* bottom, int64_t Kh, int r, float* a) {
  const int64_t plane = kMR * Kh;
  const float *a11 = top, *a12 = top + Kh, *a21 = bottom, *a22 = bottom + Kh;
  float* out = a + r * Kh;
  auto put = [&](auto v11, auto v12, auto v21, auto v22, int64_t k, auto store) ONNXRL_INLINE_LAMBDA {
    store(out + k, v11 + v22);
    store(out + plane + k, v21 + v22);
    store(out + 2 * plane + k, v11);
    store(out + 3 * plane + k, v22);
    store(out + 4 * plane + k, v11 + v12);
    store(out + 5 * plane + k, v21 - v11);
    store(out + 6 * plane + k, v12 - v22);
  };
  int64_t k = 0;
  for (; k + 16 <= Kh; k += 16) {
    put(Load<V16>(a11 + k), Load<V16>(a12 + k), Load<V16>(a21 + k), Load<V16>(a22 + k), k,
        [](float* p, V16 v) ONNXRL_INLINE_LAMBDA { Store<V16>(p, v); });
  }
  for (; k < Kh; k++) put(a11[k], a12[k], a21[k], a22[k], k, [](float* p, float v) { *p = v; });
}

// Cells runs the LSTM cell on 8 rows of one 16-unit group: left and right are their blocks of
// C (rows of 32 floats: i, o; f, c), bias_left and bias_right the group's gate biases in the
// same order (32 floats each); the state's rows are ld floats apart.
ONNXRL_TARGET_AVX512 void Cells(const float* left, const float* right, const float* bias_left,
                                const float* bias_right, const float* c_in, float* c_out, float* h_out, float* y_out,
                                int64_t ld) {
  const V16 bi = Load<V16>(bias_left), bo = Load<V16>(bias_left + 16), bf = Load<V16>(bias_right),
            bc = Load<V16>(bias_right + 16);
  for (int r = 0; r < kMR; r++) {
    V16 cn = Load<V16>(c_in + r * ld);
    const V16 h = LstmCellOf(Load<V16>(left + r * 32) + bi, Load<V16>(left + r * 32 + 16) + bo,
                             Load<V16>(right + r * 32) + bf, Load<V16>(right + r * 32 + 16) + bc, &cn);
    Store<V16>(c_out + r * ld, cn);
    Store<V16>(h_out + r * ld, h);
    if (y_out != nullptr) Store<V16>(y_out + r * ld, h);
  }
}

using ProductFn = void (*)(const float*, int64_t, const float*, int64_t, float*);
constexpr ProductFn kProduct[kProducts] = {Product<0>, Product<1>, Product<2>, Product<3>,
                                           Product<4>, Product<5>, Product<6>};

}  // namespace

int64_t LstmStrassen(const PackedWeights& s, int64_t I, int64_t H, const float* x, const float* h, const float* c,
                     int64_t n, float* scratch, float* c_out, float* h_out, float* y_out) {
  const int64_t Kh = (I + H) / 2, N2 = 2 * H, pstride = Kh * kPanel, groups = H / kUnits;
  // 64-byte aligned parts of the scratch (ScratchFloats).
  float* a = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(scratch) + 63) / 64 * 64);
  float* rows = a + Round16(kProducts * kMR * Kh);
  float* cb = rows + Round16(4 * Kh);
  // The bias of each group's gates, 16 units each: i, o from block 0's bias, f, c from block 1's.
  const float* bias_left = s.bias();
  const float* bias_right = s.bias() + N2;
  const int64_t pairs = n / kPairRows;
  for (int64_t q = 0; q < pairs; q++) {
    const int64_t m0 = q * kPairRows;
    // The pair's activation sums, from its rows [x_t, h] gathered two at a time. Copied before
    // any of its h or c is written, so h may be h_out and c c_out.
    for (int r = 0; r < kMR; r++) {
      for (int t = 0; t < 2; t++) {
        const int64_t m = m0 + r + t * kMR;
        std::memcpy(rows + t * 2 * Kh, x + m * I, I * sizeof(float));
        std::memcpy(rows + t * 2 * Kh + I, h + m * H, H * sizeof(float));
      }
      Sums(rows, rows + 2 * Kh, Kh, r, a);
    }
    for (int64_t g = 0; g < groups; g++) {
      for (int p = 0; p < kProducts; p++) {
        kProduct[p](a + p * kMR * Kh, Kh, s.panel(p * (N2 / kPanel) + 2 * g), pstride, cb);
      }
      constexpr int64_t kBlock = kMR * 2 * kUnits;
      for (int t = 0; t < 2; t++) {
        const int64_t off = (m0 + t * kMR) * H + g * kUnits;
        Cells(cb + (2 * t) * kBlock, cb + (2 * t + 1) * kBlock, bias_left + g * 2 * kUnits,
              bias_right + g * 2 * kUnits, c + off, c_out + off, h_out + off, y_out == nullptr ? nullptr : y_out + off,
              H);
      }
    }
  }
  return pairs * kPairRows;
}

#else

int64_t LstmStrassen(const PackedWeights&, int64_t, int64_t, const float*, const float*, const float*, int64_t,
                     float*, float*, float*, float*) {
  return 0;
}

#endif

}  // namespace onnxrl_ep
