// The host backend's loops against plain reference arithmetic (no runtime needed).
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "host.h"

using namespace onnxrl_ep;

static int failures = 0;

static void Expect(bool ok, const char* what, double got, double want) {
  if (!ok) {
    std::printf("FAIL %s: got %.9g want %.9g\n", what, got, want);
    failures++;
  }
}

static bool Close(float a, float b) { return std::fabs(a - b) <= 1e-5f * (1.0f + std::fabs(b)); }

static std::vector<float> Rand(size_t n, std::mt19937& g) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

static void TestDense(std::mt19937& g) {
  const int64_t K = 5, N = 6;
  for (int64_t M : {1, 3, 4, 7, 9}) {
    auto w = Rand(K * N, g), bias = Rand(N, g);
    auto a = Rand(M * K, g);
    std::vector<float> out(M * N);
    HostDense(a.data(), M, K, w.data(), N, bias.data(), kActTanh, 0, 0, out.data());
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        double acc = bias[n];
        for (int64_t k = 0; k < K; k++) acc += double(a[m * K + k]) * w[k * N + n];
        Expect(Close(out[m * N + n], float(std::tanh(acc))), "dense", out[m * N + n], std::tanh(acc));
      }
  }
}

static void TestActs() {
  Expect(ApplyAct(kActRelu, -2, 0, 0) == 0 && ApplyAct(kActRelu, 2, 0, 0) == 2, "relu", 0, 0);
  Expect(Close(ApplyAct(kActLeakyRelu, -2, 0.1f, 0), -0.2f), "leakyrelu", ApplyAct(kActLeakyRelu, -2, 0.1f, 0), -0.2);
  Expect(Close(ApplyAct(kActSigmoid, 0.3f, 0, 0), 1 / (1 + std::exp(-0.3f))), "sigmoid", 0, 0);
  Expect(ApplyAct(kActSigmoid, -200, 0, 0) == 0.0f && ApplyAct(kActSigmoid, 200, 0, 0) == 1.0f, "sigmoid saturates", 0, 0);
  Expect(ApplyAct(kActClip, 5, -1, 1) == 1 && ApplyAct(kActClip, -5, -1, 1) == -1, "clip", 0, 0);
}

static void TestBinaryBroadcast(std::mt19937& g) {
  // [2,3,4] + [3,1]
  auto a = Rand(24, g), b = Rand(3, g);
  std::vector<float> out(24);
  int64_t dims[3] = {2, 3, 4}, sa[3] = {12, 4, 1}, sb[3] = {0, 1, 0};
  HostBinary(kBinSub, a.data(), b.data(), out.data(), dims, sa, sb, 3);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++) {
        float want = a[i * 12 + j * 4 + k] - b[j];
        Expect(out[i * 12 + j * 4 + k] == want, "broadcast sub", out[i * 12 + j * 4 + k], want);
      }
}

static void TestSoftmax(std::mt19937& g) {
  auto x = Rand(2 * 3 * 4, g);
  std::vector<float> y(24), ly(24);
  HostSoftmax(false, x.data(), y.data(), 2, 3, 4);  // axis 1 of [2,3,4]
  HostSoftmax(true, x.data(), ly.data(), 2, 3, 4);
  for (int o = 0; o < 2; o++)
    for (int j = 0; j < 4; j++) {
      double sum = 0;
      for (int i = 0; i < 3; i++) {
        sum += y[o * 12 + i * 4 + j];
        Expect(Close(std::log(y[o * 12 + i * 4 + j]), ly[o * 12 + i * 4 + j]), "logsoftmax", ly[o * 12 + i * 4 + j], 0);
      }
      Expect(std::fabs(sum - 1) < 1e-6, "softmax sums to 1", sum, 1);
    }
}

static void TestTranspose(std::mt19937& g) {
  auto x = Rand(6, g);  // [2,3] -> [3,2]
  std::vector<float> y(6);
  int64_t dims[2] = {3, 2}, strides[2] = {1, 3};
  HostStridedCopy(x.data(), 0, dims, strides, 2, y.data());
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++) Expect(y[i * 2 + j] == x[j * 3 + i], "transpose", y[i * 2 + j], x[j * 3 + i]);
}

static double Sig(double x) { return 1 / (1 + std::exp(-x)); }

// Rnn holds random weights of G gates and views them.
struct Rnn {
  int64_t I, H;
  std::vector<float> wx, wh, bx, bh;
  Rnn(int64_t i, int64_t h, int64_t G, std::mt19937& g)
      : I(i), H(h), wx(Rand(i * G * h, g)), wh(Rand(h * G * h, g)), bx(Rand(G * h, g)), bh(Rand(G * h, g)) {}
  RnnWeights View() const { return RnnWeights{I, H, wx.data(), wh.data(), bx.data(), bh.data()}; }
};

static void TestLstm(std::mt19937& g) {
  const int64_t I = 3, H = 2, B = 2, T = 2;
  Rnn s(I, H, 4, g);
  auto x = Rand(T * B * I, g), h0 = Rand(B * H, g), c0 = Rand(B * H, g);
  std::vector<float> y(T * B * H), yh(B * H), yc(B * H), scratch(RnnScratch(4, H, B));
  HostLstm(s.View(), x.data(), T, B, h0.data(), c0.data(), y.data(), yh.data(), yc.data(), scratch.data());
  std::vector<double> h(h0.begin(), h0.end()), c(c0.begin(), c0.end());
  for (int64_t t = 0; t < T; t++) {
    std::vector<double> hn(B * H);
    for (int64_t b = 0; b < B; b++)
      for (int64_t j = 0; j < H; j++) {
        double gs[4];
        for (int q = 0; q < 4; q++) {
          int64_t gcol = q * H + j;
          double acc = s.bx[gcol] + s.bh[gcol];
          for (int64_t k = 0; k < I; k++) acc += x[(t * B + b) * I + k] * s.wx[k * 4 * H + gcol];
          for (int64_t k = 0; k < H; k++) acc += h[b * H + k] * s.wh[k * 4 * H + gcol];
          gs[q] = acc;
        }
        double cn = Sig(gs[2]) * c[b * H + j] + Sig(gs[0]) * std::tanh(gs[3]);
        c[b * H + j] = cn;
        hn[b * H + j] = Sig(gs[1]) * std::tanh(cn);
      }
    h = hn;
    for (int64_t i = 0; i < B * H; i++) Expect(Close(y[t * B * H + i], float(h[i])), "lstm y", y[t * B * H + i], h[i]);
  }
  for (int64_t i = 0; i < B * H; i++) {
    Expect(Close(yh[i], float(h[i])), "lstm y_h", yh[i], h[i]);
    Expect(Close(yc[i], float(c[i])), "lstm y_c", yc[i], c[i]);
  }
}

static void TestGru(std::mt19937& g, bool lbr) {
  const int64_t I = 3, H = 2, B = 2, T = 2;
  Rnn s(I, H, 3, g);
  auto x = Rand(T * B * I, g), h0 = Rand(B * H, g);
  std::vector<float> y(T * B * H), yh(B * H), scratch(RnnScratch(3, H, B));
  HostGru(s.View(), lbr, x.data(), T, B, h0.data(), y.data(), yh.data(), scratch.data());
  std::vector<double> h(h0.begin(), h0.end());
  auto xw = [&](int64_t t, int64_t b, int64_t col) {
    double acc = s.bx[col];
    for (int64_t k = 0; k < I; k++) acc += x[(t * B + b) * I + k] * s.wx[k * 3 * H + col];
    return acc;
  };
  for (int64_t t = 0; t < T; t++) {
    std::vector<double> hn(B * H);
    for (int64_t b = 0; b < B; b++) {
      auto hw = [&](const std::vector<double>& hv, int64_t col) {
        double acc = 0;
        for (int64_t k = 0; k < H; k++) acc += hv[b * H + k] * s.wh[k * 3 * H + col];
        return acc;
      };
      std::vector<double> rh(B * H);
      for (int64_t j = 0; j < H; j++) rh[b * H + j] = Sig(xw(t, b, H + j) + hw(h, H + j) + s.bh[H + j]) * h[b * H + j];
      for (int64_t j = 0; j < H; j++) {
        double z = Sig(xw(t, b, j) + hw(h, j) + s.bh[j]);
        double r = Sig(xw(t, b, H + j) + hw(h, H + j) + s.bh[H + j]);
        double cand = lbr ? std::tanh(xw(t, b, 2 * H + j) + r * (hw(h, 2 * H + j) + s.bh[2 * H + j]))
                          : std::tanh(xw(t, b, 2 * H + j) + hw(rh, 2 * H + j) + s.bh[2 * H + j]);
        hn[b * H + j] = (1 - z) * cand + z * h[b * H + j];
      }
    }
    h = hn;
    for (int64_t i = 0; i < B * H; i++) Expect(Close(y[t * B * H + i], float(h[i])), lbr ? "gru lbr y" : "gru y", y[t * B * H + i], h[i]);
  }
  for (int64_t i = 0; i < B * H; i++) Expect(Close(yh[i], float(h[i])), "gru y_h", yh[i], h[i]);
}

int main() {
  std::mt19937 g(42);
  TestDense(g);
  TestActs();
  TestBinaryBroadcast(g);
  TestSoftmax(g);
  TestTranspose(g);
  TestLstm(g);
  TestGru(g, true);
  TestGru(g, false);
  if (failures) {
    std::printf("%d failures\n", failures);
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
