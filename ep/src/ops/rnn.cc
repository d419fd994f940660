// LSTM and GRU: one layer, forward, reverse or bidirectional, default activations, no
// sequence_lens or peepholes.
#include <algorithm>

#include "../lower_util.h"
#include "ops.h"
#include "../cuda/device_args.h"
#include "../cuda/device_context.h"

namespace onnxrl_ep {

namespace {

void LowerRnn(const OrtNode* n, Plan& p) {
  const bool lstm = OpType(n) == "LSTM";
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  std::string dir = AttrString(n, "direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") Unsupported("direction " + dir);
  const int64_t D = dir == "bidirectional" ? 2 : 1;
  if (AttrInt(n, "layout", 0) != 0) Unsupported("layout=1 (only the sequence-first layout)");
  if (HasAttr(n, "clip")) Unsupported("the clip attribute");
  if (lstm && AttrInt(n, "input_forget", 0) != 0) Unsupported("input_forget=1");
  if (auto acts = AttrStrings(n, "activations")) {
    std::vector<std::string> one = lstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                        : std::vector<std::string>{"Sigmoid", "Tanh"};
    std::vector<std::string> want;
    for (int64_t d = 0; d < D; d++) want.insert(want.end(), one.begin(), one.end());
    if (!acts->empty() && *acts != want) Unsupported("activations other than the defaults");
  }
  if (Present(ins, 4)) Unsupported("a sequence_lens input");
  if (lstm && Present(ins, 7)) Unsupported("peephole weights (P)");
  const int64_t G = lstm ? 4 : 3;
  int64_t H = AttrInt(n, "hidden_size", 0);
  ConstTensor W = Param(ins.at(1), "W");
  ConstTensor R = Param(ins.at(2), "R");
  if (W.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || W.shape.size() != 3 || W.shape[0] != D) {
    Unsupported("W is not [" + std::to_string(D) + ", G*H, input] float32");
  }
  if (H <= 0) H = W.shape[1] / G;
  if (W.shape[1] != G * H) Unsupported("W's second dimension is not gates*hidden_size");
  const int64_t I = W.shape[2];
  if (R.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || R.shape != std::vector<int64_t>{D, G * H, H}) {
    Unsupported("R is not [" + std::to_string(D) + ", G*H, H] float32");
  }
  ConstTensor B;
  if (Present(ins, 3)) {
    B = Param(ins[3], "B");
    if (B.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || B.size() != D * 2 * G * H) {
      Unsupported("B is not [" + std::to_string(D) + ", 2*G*H] float32");
    }
  }
  std::unique_ptr<RnnKernel> s;
  if (lstm) {
    s = std::make_unique<LstmKernel>();
  } else {
    auto gru = std::make_unique<GruKernel>();
    gru->lbr = AttrInt(n, "linear_before_reset", 0) != 0;
    s = std::move(gru);
  }
  s->node = NodeName(n);
  s->H = H;
  s->I = I;
  s->dirs.resize(D);
  for (int64_t d = 0; d < D; d++) {
    RnnKernel::Direction& w = s->dirs[d];
    w.reverse = dir == "reverse" || d == 1;
    // Transposed so that a row of inputs accumulates into contiguous gate rows.
    const float* Wd = W.f.data() + d * G * H * I;
    const float* Rd = R.f.data() + d * G * H * H;
    w.wx.resize(I * G * H);
    for (int64_t g = 0; g < G * H; g++)
      for (int64_t k = 0; k < I; k++) w.wx[k * G * H + g] = Wd[g * I + k];
    w.wh.resize(H * G * H);
    for (int64_t g = 0; g < G * H; g++)
      for (int64_t k = 0; k < H; k++) w.wh[k * G * H + g] = Rd[g * H + k];
    w.bx.assign(G * H, 0.0f);
    w.bh.assign(G * H, 0.0f);
    if (!B.f.empty()) {
      const float* Bd = B.f.data() + d * 2 * G * H;
      for (int64_t g = 0; g < G * H; g++) {
        w.bx[g] = Bd[g];
        w.bh[g] = Bd[G * H + g];
      }
    }
  }
  s->in = {In(p, ins.at(0)), OptIn(p, ins, 5), lstm ? OptIn(p, ins, 6) : -1};
  for (size_t i = 0; i < (lstm ? 3u : 2u); i++) s->out.push_back(i < outs.size() ? Out(p, outs[i]) : -1);
  p.steps.push_back(std::move(s));
}

const OpRegistrar kRegistrar({"LSTM", "GRU"}, LowerRnn);

}  // namespace

void RnnKernel::Infer(InferContext& c) const {
  const auto& x = c.in_shape(0);
  if (x.size() != 3 || x[2] != I) c.Fail("X is not [seq, batch, " + std::to_string(I) + "]");
  const int64_t T = x[0], B = x[1], D = static_cast<int64_t>(dirs.size());
  for (size_t i = 1; i < in.size(); i++)
    if (in[i] >= 0 && c.shape(in[i]) != std::vector<int64_t>{D, B, H}) {
      c.Fail("initial state is not [" + std::to_string(D) + ", batch, hidden]");
    }
  if (out[0] >= 0) c.set_shape(out[0], {T, D, B, H});
  for (size_t i = 1; i < out.size(); i++)
    if (out[i] >= 0) c.set_shape(out[i], {D, B, H});
  // The host loop's scratch, then (reverse or two directions) each direction's h and c.
  const bool forward_only = D == 1 && !dirs[0].reverse;
  // Per row: the host loop's gates, h and c (RnnScratch), and the directions' states; all from
  // constants but B, which CheckedNumElements has bounded (X's elements), so only the product
  // can overflow.
  const int64_t per_row = RnnScratch(Gates(), I, H, 1) + (forward_only ? 0 : 2 * D * H);
  int64_t total = 0;
  if (!CheckedMul(B, per_row, &total) || total > kMaxElements) c.Fail("the scratch of a batch this large overflows");
  c.scratch = std::max(c.scratch, total);
}

namespace {

// RnnSteps runs a reverse or bidirectional layer on the host one direction at a time, one time
// step per call of step(d, t, h_prev, c_prev, y_t, h, c) (the host loop over a single step),
// the state carried in the Y_h/Y_c buffers when the graph reads them, else in scratch past the
// host loop's.
template <typename Step>
void RnnSteps(const RnnKernel& k, ExecContext& c, bool lstm, Step step) {
  const auto& x = c.shape(k.in[0]);
  const int64_t T = x[0], B = x[1], H = k.H, D = static_cast<int64_t>(k.dirs.size()), BH = B * H;
  float* state = c.scratch() + RnnScratch(k.Gates(), k.I, H, B);
  for (int64_t d = 0; d < D; d++) {
    const float* h0 = k.in[1] >= 0 ? c.CF(k.in[1]) + d * BH : nullptr;
    const float* c0 = lstm && k.in[2] >= 0 ? c.CF(k.in[2]) + d * BH : nullptr;
    float* h = k.out[1] >= 0 ? c.F(k.out[1]) + d * BH : state + 2 * d * BH;
    float* cs = lstm && k.out[2] >= 0 ? c.F(k.out[2]) + d * BH : state + (2 * d + 1) * BH;
    if (T == 0) step(d, int64_t{-1}, h0, c0, nullptr, h, cs);  // the outputs are the initial state
    for (int64_t s = 0; s < T; s++) {
      const int64_t t = k.dirs[d].reverse ? T - 1 - s : s;
      float* yt = k.out[0] >= 0 ? c.F(k.out[0]) + (t * D + d) * BH : nullptr;
      step(d, t, s == 0 ? h0 : h, s == 0 ? c0 : cs, yt, h, cs);
    }
  }
}

bool ForwardOnly(const RnnKernel& k) { return k.dirs.size() == 1 && !k.dirs[0].reverse; }

}  // namespace

void RnnKernel::PrepareHost() {
  const bool lstm = Gates() == 4;
  const bool lbr = !lstm && static_cast<const GruKernel*>(this)->lbr;
  for (size_t d = 0; d < dirs.size(); d++) {
    Direction& w = dirs[d];
    if (!w.px.empty()) continue;  // prepared already
    RnnPack(Weights(d), lstm, lbr, &w.px, &w.ph, &w.phn);
    for (auto* v : {&w.wx, &w.wh, &w.bx, &w.bh}) std::vector<float>().swap(*v);
  }
}

void LstmKernel::Host(ExecContext& c) const {
  const auto& x = c.shape(in[0]);
  if (ForwardOnly(*this)) {
    const RnnWeights w = Weights(0);
    const int64_t T = x[0], B = x[1];
    const float *px = c.CF(in[0]), *h0 = c.CF(in[1]), *c0 = c.CF(in[2]);
    float *y = c.F(out[0]), *yh = c.F(out[1]), *yc = c.F(out[2]), *scratch = c.scratch();
    // Rows are independent through every step: split over the session's threads.
    c.ParallelRows(B, T * (I + H) * 4 * H, [&](int64_t b0, int64_t b1) {
      HostLstm(w, px, T, B, h0, c0, y, yh, yc, scratch, b0, b1);
    });
    return;
  }
  const int64_t B = x[1];
  const float* px = c.CF(in[0]);
  RnnSteps(*this, c, true, [&](int64_t d, int64_t t, const float* h0, const float* c0, float* y, float* h, float* cs) {
    HostLstm(Weights(d), px + std::max<int64_t>(t, 0) * B * I, t < 0 ? 0 : 1, B, h0, c0, y, h, cs, c.scratch());
  });
}

void GruKernel::Host(ExecContext& c) const {
  const auto& x = c.shape(in[0]);
  if (ForwardOnly(*this)) {
    const RnnWeights w = Weights(0);
    const int64_t T = x[0], B = x[1];
    const float *px = c.CF(in[0]), *h0 = c.CF(in[1]);
    float *y = c.F(out[0]), *yh = c.F(out[1]), *scratch = c.scratch();
    c.ParallelRows(B, T * (I + H) * 3 * H, [&](int64_t b0, int64_t b1) {
      HostGru(w, lbr, px, T, B, h0, y, yh, scratch, b0, b1);
    });
    return;
  }
  const int64_t B = x[1];
  const float* px = c.CF(in[0]);
  RnnSteps(*this, c, false, [&](int64_t d, int64_t t, const float* h0, const float*, float* y, float* h, float*) {
    HostGru(Weights(d), lbr, px + std::max<int64_t>(t, 0) * B * I, t < 0 ? 0 : 1, B, h0, y, h, c.scratch());
  });
}

namespace {

// StateBuffer is where direction d's recurrent state of n floats lives on the device: its part of
// the output's buffer when the graph reads that output (no copy out), else the step's scratch
// buffer i.
cu::CUdeviceptr StateBuffer(DeviceContext& c, int out, long long d, size_t i, long long n) {
  if (out >= 0) return c.ptr(out) + static_cast<cu::CUdeviceptr>(d * n * sizeof(float));
  return c.Scratch(i, static_cast<size_t>(n));
}

// InitialState is direction d's part of the initial state input where it is (no copy in), or,
// when the graph gives none, buf filled with zeros.
cu::CUdeviceptr InitialState(DeviceContext& c, int in, long long d, cu::CUdeviceptr buf, long long n) {
  if (in >= 0) return c.ptr(in) + static_cast<cu::CUdeviceptr>(d * n * sizeof(float));
  float zero = 0.0f;
  c.Elementwise("onnxrl_fill", n, {&buf, &n, &zero});
  return buf;
}

// StepOffset is the byte offset of direction d's step t in X (rows of width) or Y ([T, D, B, H]).
cu::CUdeviceptr StepOffset(long long t, long long D, long long d, long long B, long long width) {
  return static_cast<cu::CUdeviceptr>(((t * D + d) * B * width) * sizeof(float));
}

}  // namespace

void LstmKernel::Device(DeviceContext& c) const {
  const auto& x = c.shape(in[0]);
  long long T = x[0], B = x[1];
  const long long G = 4 * H, D = static_cast<long long>(dirs.size());
  int h_int = static_cast<int>(H), i_int = static_cast<int>(I);
  const size_t state = static_cast<size_t>(B * H) * sizeof(float);
  long long n = B * H;
  cu::CUdeviceptr gates = c.Scratch(0, B * G);
  for (long long d = 0; d < D; d++) {
    const Direction& w = dirs[d];
    cu::CUdeviceptr wx_d = c.Resident(w.wx), wh_d = c.Resident(w.wh), bx_d = c.Resident(w.bx), bh_d = c.Resident(w.bh);
    // The state lives in Y_h's and Y_c's buffers when the graph wants them (no copies out); the
    // first step reads initial_h and initial_c where they are (no copies in).
    cu::CUdeviceptr h = StateBuffer(c, out[1], d, 1 + 2 * d, n), cs = StateBuffer(c, out[2], d, 2 + 2 * d, n);
    cu::CUdeviceptr h_prev = InitialState(c, in[1], d, h, n), c_prev = InitialState(c, in[2], d, cs, n);
    for (long long s = 0; s < T; s++) {
      const long long t = w.reverse ? T - 1 - s : s;
      cu::CUdeviceptr xt = c.ptr(in[0]) + StepOffset(t, 1, 0, B, I);
      cu::CUdeviceptr yt = out[0] >= 0 ? c.ptr(out[0]) + StepOffset(t, D, d, B, H) : 0;
      if (h_prev != h && c_prev != cs) {
        // The new state goes elsewhere: the products and the cell in one launch.
        c.Elementwise("onnxrl_lstm_step", (B + 3) / 4 * H,
                      {&xt, &h_prev, &c_prev, &wx_d, &wh_d, &bx_d, &bh_d, &cs, &h, &yt, &B, &i_int, &h_int});
      } else {
        c.Gemm(xt, I, wx_d, G, bx_d, gates, G, B, G, I, false, kActNone, 0, 0);
        c.Gemm(h_prev, H, wh_d, G, bh_d, gates, G, B, G, H, true, kActNone, 0, 0);
        c.Elementwise("onnxrl_lstm_cell", n, {&gates, &c_prev, &cs, &h, &yt, &B, &h_int});
      }
      h_prev = h;
      c_prev = cs;
    }
    if (T == 0) {  // the outputs are the initial state
      if (out[1] >= 0 && h != h_prev) c.Copy(h, h_prev, state);
      if (out[2] >= 0 && cs != c_prev) c.Copy(cs, c_prev, state);
    }
  }
}

void GruKernel::Device(DeviceContext& c) const {
  const auto& x = c.shape(in[0]);
  long long T = x[0], B = x[1];
  const long long G = 3 * H, D = static_cast<long long>(dirs.size());
  int h_int = static_cast<int>(H);
  const size_t state = static_cast<size_t>(B * H) * sizeof(float);
  long long n = B * H;
  cu::CUdeviceptr gx = c.Scratch(0, B * G), gh = c.Scratch(1, B * G), rh = c.Scratch(3, B * H);
  // The candidate's third of Wh and bh: columns 2H.. of rows of 3H.
  const cu::CUdeviceptr third = static_cast<cu::CUdeviceptr>(2 * H * sizeof(float));
  for (long long d = 0; d < D; d++) {
    const Direction& w = dirs[d];
    cu::CUdeviceptr wx_d = c.Resident(w.wx), wh_d = c.Resident(w.wh), bx_d = c.Resident(w.bx), bh_d = c.Resident(w.bh);
    cu::CUdeviceptr h = StateBuffer(c, out[1], d, 2 + 2 * d, n);
    cu::CUdeviceptr h_prev = InitialState(c, in[1], d, h, n);
    for (long long s = 0; s < T; s++) {
      const long long t = w.reverse ? T - 1 - s : s;
      cu::CUdeviceptr xt = c.ptr(in[0]) + StepOffset(t, 1, 0, B, I);
      cu::CUdeviceptr yt = out[0] >= 0 ? c.ptr(out[0]) + StepOffset(t, D, d, B, H) : 0;
      c.Gemm(xt, I, wx_d, G, bx_d, gx, G, B, G, I, false, kActNone, 0, 0);
      if (lbr) {
        c.Gemm(h_prev, H, wh_d, G, bh_d, gh, G, B, G, H, false, kActNone, 0, 0);
        c.Elementwise("onnxrl_gru_lbr", n, {&gx, &gh, &h_prev, &h, &yt, &B, &h_int});
      } else {
        c.Gemm(h_prev, H, wh_d, G, bh_d, gh, G, B, 2 * H, H, false, kActNone, 0, 0);
        c.Elementwise("onnxrl_gru_reset", n, {&gx, &gh, &h_prev, &rh, &B, &h_int});
        c.Gemm(rh, H, wh_d + third, G, bh_d + third, gh + third, G, B, H, H, false, kActNone, 0, 0);
        c.Elementwise("onnxrl_gru_out", n, {&gx, &gh, &h_prev, &h, &yt, &B, &h_int});
      }
      h_prev = h;
    }
    if (T == 0 && out[1] >= 0 && h != h_prev) c.Copy(h, h_prev, state);
  }
}

}  // namespace onnxrl_ep
