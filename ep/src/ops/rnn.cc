// LSTM and GRU: forward, one layer, default activations, no sequence_lens or peepholes.
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
  if (dir != "forward") Unsupported("direction " + dir + " (only forward)");
  if (AttrInt(n, "layout", 0) != 0) Unsupported("layout=1 (only the sequence-first layout)");
  if (HasAttr(n, "clip")) Unsupported("the clip attribute");
  if (lstm && AttrInt(n, "input_forget", 0) != 0) Unsupported("input_forget=1");
  if (auto acts = AttrStrings(n, "activations")) {
    std::vector<std::string> want = lstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                         : std::vector<std::string>{"Sigmoid", "Tanh"};
    if (!acts->empty() && *acts != want) Unsupported("activations other than the defaults");
  }
  if (Present(ins, 4)) Unsupported("a sequence_lens input");
  if (lstm && Present(ins, 7)) Unsupported("peephole weights (P)");
  const int64_t G = lstm ? 4 : 3;
  int64_t H = AttrInt(n, "hidden_size", 0);
  ConstTensor W = Param(ins.at(1), "W");
  ConstTensor R = Param(ins.at(2), "R");
  if (W.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || W.shape.size() != 3 || W.shape[0] != 1) Unsupported("W is not [1, G*H, input] float32");
  if (H <= 0) H = W.shape[1] / G;
  if (W.shape[1] != G * H) Unsupported("W's second dimension is not gates*hidden_size");
  const int64_t I = W.shape[2];
  if (R.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || R.shape != std::vector<int64_t>{1, G * H, H}) Unsupported("R is not [1, G*H, H] float32");
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
  // Transposed so that a row of inputs accumulates into contiguous gate rows.
  s->wx.resize(I * G * H);
  for (int64_t g = 0; g < G * H; g++)
    for (int64_t k = 0; k < I; k++) s->wx[k * G * H + g] = W.f[g * I + k];
  s->wh.resize(H * G * H);
  for (int64_t g = 0; g < G * H; g++)
    for (int64_t k = 0; k < H; k++) s->wh[k * G * H + g] = R.f[g * H + k];
  s->bx.assign(G * H, 0.0f);
  s->bh.assign(G * H, 0.0f);
  if (Present(ins, 3)) {
    ConstTensor B = Param(ins[3], "B");
    if (B.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || B.size() != 2 * G * H) Unsupported("B is not [1, 2*G*H] float32");
    for (int64_t g = 0; g < G * H; g++) {
      s->bx[g] = B.f[g];
      s->bh[g] = B.f[G * H + g];
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
  int64_t T = x[0], B = x[1];
  for (size_t i = 1; i < in.size(); i++)
    if (in[i] >= 0 && c.shape(in[i]) != std::vector<int64_t>{1, B, H}) c.Fail("initial state is not [1, batch, hidden]");
  if (out[0] >= 0) c.set_shape(out[0], {T, 1, B, H});
  for (size_t i = 1; i < out.size(); i++)
    if (out[i] >= 0) c.set_shape(out[i], {1, B, H});
  c.scratch = std::max(c.scratch, RnnScratch(Gates(), H, B));
}

void LstmKernel::Host(ExecContext& c) const {
  const auto& x = c.shape(in[0]);
  HostLstm(Weights(), c.CF(in[0]), x[0], x[1], c.CF(in[1]), c.CF(in[2]), c.F(out[0]), c.F(out[1]), c.F(out[2]),
           c.scratch());
}

void GruKernel::Host(ExecContext& c) const {
  const auto& x = c.shape(in[0]);
  HostGru(Weights(), lbr, c.CF(in[0]), x[0], x[1], c.CF(in[1]), c.F(out[0]), c.F(out[1]), c.scratch());
}

namespace {

// StateBuffer is where a recurrent state of n floats lives on the device: the output's buffer
// when the graph reads that output (no copy out), else the step's scratch buffer i.
cu::CUdeviceptr StateBuffer(DeviceContext& c, int out, size_t i, long long n) {
  return out >= 0 ? c.ptr(out) : c.Scratch(i, static_cast<size_t>(n));
}

// InitialState is the initial state input where it is (no copy in), or, when the graph gives
// none, buf filled with zeros.
cu::CUdeviceptr InitialState(DeviceContext& c, int in, cu::CUdeviceptr buf, long long n) {
  if (in >= 0) return c.ptr(in);
  float zero = 0.0f;
  c.Elementwise("onnxrl_fill", n, {&buf, &n, &zero});
  return buf;
}

}  // namespace

void LstmKernel::Device(DeviceContext& c) const {
  const auto& x = c.shape(in[0]);
  long long T = x[0], B = x[1];
  const long long G = 4 * H;
  int h_int = static_cast<int>(H);
  const size_t state = static_cast<size_t>(B * H) * sizeof(float);
  long long n = B * H;
  cu::CUdeviceptr gates = c.Scratch(0, B * G);
  cu::CUdeviceptr wx_d = c.Resident(wx), wh_d = c.Resident(wh), bx_d = c.Resident(bx), bh_d = c.Resident(bh);
  // The state lives in Y_h's and Y_c's buffers when the graph wants them (no copies out); the
  // first step reads initial_h and initial_c where they are (no copies in).
  cu::CUdeviceptr h = StateBuffer(c, out[1], 1, n), cs = StateBuffer(c, out[2], 2, n);
  cu::CUdeviceptr h_prev = InitialState(c, in[1], h, n), c_prev = InitialState(c, in[2], cs, n);
  for (long long t = 0; t < T; t++) {
    cu::CUdeviceptr xt = c.ptr(in[0]) + static_cast<cu::CUdeviceptr>(t * B * I * sizeof(float));
    c.Gemm(xt, I, wx_d, G, bx_d, gates, G, B, G, I, false, kActNone, 0, 0);
    c.Gemm(h_prev, H, wh_d, G, bh_d, gates, G, B, G, H, true, kActNone, 0, 0);
    cu::CUdeviceptr yt = out[0] >= 0 ? c.ptr(out[0]) + static_cast<cu::CUdeviceptr>(t * state) : 0;
    c.Elementwise("onnxrl_lstm_cell", n, {&gates, &c_prev, &cs, &h, &yt, &B, &h_int});
    h_prev = h;
    c_prev = cs;
  }
  if (T == 0) {  // the outputs are the initial state
    if (out[1] >= 0) c.Copy(h, h_prev, state);
    if (out[2] >= 0) c.Copy(cs, c_prev, state);
  }
}

void GruKernel::Device(DeviceContext& c) const {
  const auto& x = c.shape(in[0]);
  long long T = x[0], B = x[1];
  const long long G = 3 * H;
  int h_int = static_cast<int>(H);
  const size_t state = static_cast<size_t>(B * H) * sizeof(float);
  long long n = B * H;
  cu::CUdeviceptr gx = c.Scratch(0, B * G), gh = c.Scratch(1, B * G), rh = c.Scratch(3, B * H);
  cu::CUdeviceptr wx_d = c.Resident(wx), wh_d = c.Resident(wh), bx_d = c.Resident(bx), bh_d = c.Resident(bh);
  cu::CUdeviceptr h = StateBuffer(c, out[1], 2, n);
  cu::CUdeviceptr h_prev = InitialState(c, in[1], h, n);
  // The candidate's third of Wh and bh: columns 2H.. of rows of 3H.
  const cu::CUdeviceptr third = static_cast<cu::CUdeviceptr>(2 * H * sizeof(float));
  for (long long t = 0; t < T; t++) {
    cu::CUdeviceptr xt = c.ptr(in[0]) + static_cast<cu::CUdeviceptr>(t * B * I * sizeof(float));
    cu::CUdeviceptr yt = out[0] >= 0 ? c.ptr(out[0]) + static_cast<cu::CUdeviceptr>(t * state) : 0;
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
  if (T == 0 && out[1] >= 0) c.Copy(h, h_prev, state);
}

}  // namespace onnxrl_ep
