// Lowering ONNX nodes to plan steps, and the fusions (bias and activation into Dense).
#include <cfloat>
#include <cmath>

#include "plan.h"

namespace onnxrl_ep {

int Plan::Id(const std::string& name) {
  auto it = ids.find(name);
  if (it != ids.end()) return it->second;
  int id = static_cast<int>(values.size());
  values.push_back(Value{});
  values.back().name = name;
  ids.emplace(name, id);
  return id;
}

namespace {

[[noreturn]] void Unsupported(const std::string& why) { throw Error{why}; }

bool Present(const std::vector<const OrtValueInfo*>& v, size_t i) {
  return i < v.size() && v[i] != nullptr && !ValueName(v[i]).empty();
}

void RequireFloat(const OrtValueInfo* v) {
  auto t = ElemType(v);
  if (t != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
    Unsupported("input " + ValueName(v) + " has element type " + std::to_string(t) + ", want float32");
  }
}

// In adds a data input (float32) to the plan; constants are copied now.
int In(Plan& p, const OrtValueInfo* v) {
  RequireFloat(v);
  int id = p.Id(ValueName(v));
  Value& val = p.values[id];
  if (!val.is_const && IsConstant(v)) {
    val.c = ReadConstant(v);
    val.is_const = true;
  }
  return id;
}

// OptIn: an optional float input, -1 when absent.
int OptIn(Plan& p, const std::vector<const OrtValueInfo*>& ins, size_t i) {
  return Present(ins, i) ? In(p, ins[i]) : -1;
}

int Out(Plan& p, const OrtValueInfo* v, ONNXTensorElementDataType t = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
  if (v == nullptr || ValueName(v).empty()) return -1;
  int id = p.Id(ValueName(v));
  p.values[id].type = t;
  return id;
}

// Param reads a constant parameter input (shape, axes, indices, ...).
ConstTensor Param(const OrtValueInfo* v, const char* what) {
  if (!IsConstant(v)) Unsupported(std::string(what) + " input " + ValueName(v) + " is not a constant initializer");
  return ReadConstant(v);
}

float ScalarParam(const OrtValueInfo* v, const char* what) {
  ConstTensor t = Param(v, what);
  if (t.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || t.f.size() != 1) {
    Unsupported(std::string(what) + " is not a float scalar");
  }
  return t.f[0];
}

Step& Add(Plan& p, Op op, const OrtNode* n) {
  p.steps.push_back(Step{});
  Step& s = p.steps.back();
  s.op = op;
  s.node = NodeName(n);
  return s;
}

void LowerDense(const OrtNode* n, Plan& p, bool gemm) {
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  if (ins.size() < 2) Unsupported("fewer than two inputs");
  if (!IsConstant(ins[1])) Unsupported("the weight input " + ValueName(ins[1]) + " is not a constant initializer");
  int a = In(p, ins[0]);
  ConstTensor w = Param(ins[1], "weight");
  if (w.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || w.shape.size() != 2) Unsupported("the weight is not a 2-D float32 tensor");
  Step s;
  s.op = Op::kDense;
  s.node = NodeName(n);
  if (!gemm) {
    auto sh = Shape(ins[0]);
    if (!sh || sh->empty()) Unsupported("MatMul input of unknown or zero rank");
    s.K = w.shape[0];
    s.N = w.shape[1];
    s.w = std::move(w.f);
  } else {
    auto sh = Shape(ins[0]);
    if (!sh || sh->size() != 2) Unsupported("Gemm input A is not 2-D");
    if (AttrInt(n, "transA", 0) != 0) Unsupported("Gemm with transA=1");
    bool tb = AttrInt(n, "transB", 0) != 0;
    float alpha = AttrFloat(n, "alpha", 1.0f);
    float beta = AttrFloat(n, "beta", 1.0f);
    s.K = tb ? w.shape[1] : w.shape[0];
    s.N = tb ? w.shape[0] : w.shape[1];
    s.w.resize(s.K * s.N);
    for (int64_t k = 0; k < s.K; k++) {
      for (int64_t j = 0; j < s.N; j++) {
        float v = tb ? w.f[j * s.K + k] : w.f[k * s.N + j];
        s.w[k * s.N + j] = alpha * v;
      }
    }
    if (Present(ins, 2) && !IsConstant(ins[2])) {
      // A runtime C (the runtime's MatMul+Add fusion makes these): Dense, then a broadcast Add.
      if (beta != 1.0f) Unsupported("Gemm with a non-constant C and beta != 1");
      int c = In(p, ins[2]);
      int tmp = p.Id(ValueName(outs.at(0)) + "/onnxrl_gemm_ab");
      s.in = {a};
      s.out = {tmp};
      p.steps.push_back(std::move(s));
      Step add;
      add.op = Op::kBinary;
      add.code = kBinAdd;
      add.node = NodeName(n);
      add.in = {tmp, c};
      add.out = {Out(p, outs.at(0))};
      p.steps.push_back(std::move(add));
      return;
    }
    if (Present(ins, 2)) {
      ConstTensor c = ReadConstant(ins[2]);
      if (c.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) Unsupported("Gemm's C is not float32");
      int64_t sz = c.size();
      bool row = sz == s.N && (c.shape.size() == 1 || (c.shape.size() == 2 && c.shape[0] == 1));
      bool scalar = sz == 1;
      if (!row && !scalar) Unsupported("Gemm's C is not a row of N values or a scalar");
      s.bias.resize(s.N);
      for (int64_t j = 0; j < s.N; j++) s.bias[j] = beta * (scalar ? c.f[0] : c.f[j]);
    }
  }
  s.in = {a};
  s.out = {Out(p, outs.at(0))};
  p.steps.push_back(std::move(s));
}

void LowerUnary(const OrtNode* n, Plan& p, const std::string& op) {
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  Step s;
  s.op = Op::kUnary;
  s.node = NodeName(n);
  s.in = {In(p, ins.at(0))};
  if (op == "Relu") {
    s.code = kActRelu;
  } else if (op == "LeakyRelu") {
    s.code = kActLeakyRelu;
    s.a = AttrFloat(n, "alpha", 0.01f);
  } else if (op == "Tanh") {
    s.code = kActTanh;
  } else if (op == "Sigmoid") {
    s.code = kActSigmoid;
  } else if (op == "Exp") {
    s.code = kActExp;
  } else if (op == "Log") {
    s.code = kActLog;
  } else if (op == "Neg") {
    s.code = kActNeg;
  } else if (op == "Clip") {
    s.code = kActClip;
    if (SinceVersion(n) < 11) {
      s.a = AttrFloat(n, "min", -FLT_MAX);
      s.b = AttrFloat(n, "max", FLT_MAX);
    } else {
      s.a = Present(ins, 1) ? ScalarParam(ins[1], "Clip min") : -INFINITY;
      s.b = Present(ins, 2) ? ScalarParam(ins[2], "Clip max") : INFINITY;
    }
  }
  s.out = {Out(p, outs.at(0))};
  p.steps.push_back(std::move(s));
}

void LowerRnn(const OrtNode* n, Plan& p, bool lstm) {
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
  Step s;
  s.op = lstm ? Op::kLstm : Op::kGru;
  s.node = NodeName(n);
  s.H = H;
  s.I = I;
  s.lbr = !lstm && AttrInt(n, "linear_before_reset", 0) != 0;
  // Transposed so that a row of inputs accumulates into contiguous gate rows.
  s.wx.resize(I * G * H);
  for (int64_t g = 0; g < G * H; g++)
    for (int64_t k = 0; k < I; k++) s.wx[k * G * H + g] = W.f[g * I + k];
  s.wh.resize(H * G * H);
  for (int64_t g = 0; g < G * H; g++)
    for (int64_t k = 0; k < H; k++) s.wh[k * G * H + g] = R.f[g * H + k];
  s.bx.assign(G * H, 0.0f);
  s.bh.assign(G * H, 0.0f);
  if (Present(ins, 3)) {
    ConstTensor B = Param(ins[3], "B");
    if (B.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || B.size() != 2 * G * H) Unsupported("B is not [1, 2*G*H] float32");
    for (int64_t g = 0; g < G * H; g++) {
      s.bx[g] = B.f[g];
      s.bh[g] = B.f[G * H + g];
    }
  }
  s.in = {In(p, ins.at(0)), OptIn(p, ins, 5), lstm ? OptIn(p, ins, 6) : -1};
  for (size_t i = 0; i < (lstm ? 3u : 2u); i++) s.out.push_back(i < outs.size() ? Out(p, outs[i]) : -1);
  p.steps.push_back(std::move(s));
}

std::vector<int64_t> Ints(const ConstTensor& t, const char* what) {
  if (t.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64) Unsupported(std::string(what) + " is not an integer tensor");
  return t.i;
}

}  // namespace

void LowerNode(const OrtNode* n, Plan& p) {
  std::string dom = Domain(n);
  std::string op = OpType(n);
  if (!dom.empty() && dom != "ai.onnx") Unsupported("operator " + dom + "." + op + " is not in the ONNX domain");
  auto ins = NodeInputs(n);
  auto outs = NodeOutputs(n);
  int ver = SinceVersion(n);
  if (op == "MatMul" || op == "Gemm") return LowerDense(n, p, op == "Gemm");
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    Step& s = Add(p, Op::kBinary, n);
    s.code = op == "Add" ? kBinAdd : op == "Sub" ? kBinSub : op == "Mul" ? kBinMul : kBinDiv;
    int a = In(p, ins.at(0)), b = In(p, ins.at(1));
    p.steps.back().in = {a, b};
    p.steps.back().out = {Out(p, outs.at(0))};
    return;
  }
  if (op == "Relu" || op == "LeakyRelu" || op == "Tanh" || op == "Sigmoid" || op == "Exp" || op == "Log" ||
      op == "Clip" || op == "Neg") {
    return LowerUnary(n, p, op);
  }
  if (op == "Softmax" || op == "LogSoftmax") {
    Step s;
    s.op = Op::kSoftmax;
    s.node = NodeName(n);
    s.log = op == "LogSoftmax";
    s.legacy = ver < 13;
    s.axis = AttrInt(n, "axis", s.legacy ? 1 : -1);
    s.in = {In(p, ins.at(0))};
    s.out = {Out(p, outs.at(0))};
    p.steps.push_back(std::move(s));
    return;
  }
  if (op == "Identity" || op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
    Step s;
    s.op = Op::kCopy;
    s.node = NodeName(n);
    if (op == "Reshape") {
      s.copy = CopyKind::kReshape;
      s.ints = Ints(Param(ins.at(1), "Reshape shape"), "Reshape shape");
      s.allowzero = AttrInt(n, "allowzero", 0) != 0;
    } else if (op == "Flatten") {
      s.copy = CopyKind::kFlatten;
      s.axis = AttrInt(n, "axis", 1);
    } else if (op == "Squeeze" || op == "Unsqueeze") {
      s.copy = op == "Squeeze" ? CopyKind::kSqueeze : CopyKind::kUnsqueeze;
      if (ver >= 13) {
        if (Present(ins, 1)) s.ints = Ints(Param(ins[1], "axes"), "axes");
      } else if (auto ax = AttrInts(n, "axes")) {
        s.ints = *ax;
      }
      if (op == "Unsqueeze" && s.ints.empty()) Unsupported("Unsqueeze without axes");
    }
    s.in = {In(p, ins.at(0))};
    s.out = {Out(p, outs.at(0))};
    p.steps.push_back(std::move(s));
    return;
  }
  if (op == "Transpose") {
    Step s;
    s.op = Op::kTranspose;
    s.node = NodeName(n);
    if (auto perm = AttrInts(n, "perm")) s.ints = *perm;
    s.in = {In(p, ins.at(0))};
    s.out = {Out(p, outs.at(0))};
    p.steps.push_back(std::move(s));
    return;
  }
  if (op == "Concat") {
    Step s;
    s.op = Op::kConcat;
    s.node = NodeName(n);
    s.axis = AttrInt(n, "axis", 0);
    for (auto* v : ins) s.in.push_back(In(p, v));
    s.out = {Out(p, outs.at(0))};
    p.steps.push_back(std::move(s));
    return;
  }
  if (op == "Slice") {
    Step s;
    s.op = Op::kSlice;
    s.node = NodeName(n);
    if (ver < 10) {
      s.starts = AttrInts(n, "starts").value_or(std::vector<int64_t>{});
      s.ends = AttrInts(n, "ends").value_or(std::vector<int64_t>{});
      s.axes = AttrInts(n, "axes").value_or(std::vector<int64_t>{});
    } else {
      s.starts = Ints(Param(ins.at(1), "starts"), "starts");
      s.ends = Ints(Param(ins.at(2), "ends"), "ends");
      if (Present(ins, 3)) s.axes = Ints(Param(ins[3], "axes"), "axes");
      if (Present(ins, 4)) s.steps = Ints(Param(ins[4], "steps"), "steps");
    }
    if (s.starts.size() != s.ends.size()) Unsupported("starts and ends differ in length");
    if (s.axes.empty())
      for (size_t i = 0; i < s.starts.size(); i++) s.axes.push_back(static_cast<int64_t>(i));
    if (s.steps.empty()) s.steps.assign(s.starts.size(), 1);
    if (s.axes.size() != s.starts.size() || s.steps.size() != s.starts.size()) Unsupported("axes or steps differ in length from starts");
    for (int64_t st : s.steps)
      if (st == 0) Unsupported("a zero step");
    s.in = {In(p, ins.at(0))};
    s.out = {Out(p, outs.at(0))};
    p.steps.push_back(std::move(s));
    return;
  }
  if (op == "Gather") {
    Step s;
    s.op = Op::kGather;
    s.node = NodeName(n);
    s.axis = AttrInt(n, "axis", 0);
    ConstTensor idx = Param(ins.at(1), "Gather indices");
    s.ints = Ints(idx, "Gather indices");
    s.idx_shape = idx.shape;
    s.in = {In(p, ins.at(0))};
    s.out = {Out(p, outs.at(0))};
    p.steps.push_back(std::move(s));
    return;
  }
  if (op == "Split") {
    Step s;
    s.op = Op::kSplit;
    s.node = NodeName(n);
    s.axis = AttrInt(n, "axis", 0);
    if (ver >= 13) {
      if (Present(ins, 1)) s.ints = Ints(Param(ins[1], "split"), "split");
    } else if (auto sp = AttrInts(n, "split")) {
      s.ints = *sp;
    }
    s.in = {In(p, ins.at(0))};
    for (auto* v : outs) {
      int id = Out(p, v);
      if (id < 0) Unsupported("a missing Split output");
      s.out.push_back(id);
    }
    p.steps.push_back(std::move(s));
    return;
  }
  if (op == "Shape") {
    Step s;
    s.op = Op::kShape;
    s.node = NodeName(n);
    s.start = AttrInt(n, "start", 0);
    s.end = AttrInt(n, "end", LLONG_MAX);
    // Only the shape is read: any element type will do, but it has to be a value of the plan.
    int id = p.Id(ValueName(ins.at(0)));
    if (IsConstant(ins[0]) && !p.values[id].is_const) {
      p.values[id].c = ReadConstant(ins[0]);
      p.values[id].is_const = true;
      p.values[id].type = p.values[id].c.type;
    } else if (ElemType(ins[0]) != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
      Unsupported("Shape of a non-float32 tensor");
    }
    s.in = {id};
    s.out = {Out(p, outs.at(0), ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64)};
    p.steps.push_back(std::move(s));
    return;
  }
  if (op == "ConstantOfShape") {
    Step s;
    s.op = Op::kFill;
    s.node = NodeName(n);
    if (auto v = AttrTensor(n, "value")) {
      if (v->type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || v->f.size() != 1) Unsupported("a value that is not one float32");
      s.fill = v->f[0];
    }
    const OrtNode* prod = Producer(ins.at(0));
    int id = p.Id(ValueName(ins[0]));
    if (IsConstant(ins[0])) {
      p.values[id].c = ReadConstant(ins[0]);
      p.values[id].is_const = true;
      p.values[id].type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
    } else if (prod == nullptr || OpType(prod) != "Shape") {
      Unsupported("ConstantOfShape whose shape is neither constant nor a Shape node's output");
    } else {
      p.values[id].type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
    }
    s.in = {id};
    s.out = {Out(p, outs.at(0))};
    p.steps.push_back(std::move(s));
    return;
  }
  if (op == "LSTM") return LowerRnn(n, p, true);
  if (op == "GRU") return LowerRnn(n, p, false);
  Unsupported("operator " + op + " is not supported");
}

namespace {

std::vector<int> Consumers(const Plan& p, int v) {
  std::vector<int> c;
  for (size_t i = 0; i < p.steps.size(); i++)
    for (int x : p.steps[i].in)
      if (x == v) c.push_back(static_cast<int>(i));
  return c;
}

bool FuseOnce(Plan& p) {
  for (size_t i = 0; i < p.steps.size(); i++) {
    Step& d = p.steps[i];
    if (d.op != Op::kDense) continue;
    int v = d.out[0];
    if (p.values[v].output >= 0) continue;
    auto cons = Consumers(p, v);
    if (cons.size() != 1) continue;
    Step& s = p.steps[cons[0]];
    if (s.op == Op::kBinary && s.code == kBinAdd && d.code == kActNone) {
      int other = s.in[0] == v ? s.in[1] : s.in[0];
      if (other == v || !p.values[other].is_const) continue;
      const ConstTensor& c = p.values[other].c;
      bool row = c.size() == d.N && (c.shape.size() == 1 || (c.shape.size() == 2 && c.shape[0] == 1));
      if (!row) continue;
      if (d.bias.empty()) d.bias.assign(d.N, 0.0f);
      for (int64_t j = 0; j < d.N; j++) d.bias[j] += c.f[j];
      d.out = s.out;
      p.steps.erase(p.steps.begin() + cons[0]);
      return true;
    }
    if (s.op == Op::kUnary && d.code == kActNone &&
        (s.code == kActRelu || s.code == kActLeakyRelu || s.code == kActTanh || s.code == kActSigmoid ||
         s.code == kActClip)) {
      d.code = s.code;
      d.a = s.a;
      d.b = s.b;
      d.out = s.out;
      p.steps.erase(p.steps.begin() + cons[0]);
      return true;
    }
  }
  return false;
}

}  // namespace

void Fuse(Plan& p) {
  while (FuseOnce(p)) {
  }
}

Plan BuildPlan(const OrtGraph* graph, const OrtNode* fused) {
  Plan p;
  p.name = NodeName(fused);
  auto ins = NodeInputs(fused);
  auto outs = NodeOutputs(fused);
  for (size_t i = 0; i < ins.size(); i++) {
    int id = p.Id(ValueName(ins[i]));
    p.values[id].input = static_cast<int>(i);
    p.values[id].type = ElemType(ins[i]);
    p.inputs.push_back(id);
  }
  for (size_t i = 0; i < outs.size(); i++) {
    int id = p.Id(ValueName(outs[i]));
    p.values[id].output = static_cast<int>(i);
    p.values[id].type = ElemType(outs[i]);
    p.outputs.push_back(id);
  }
  for (const OrtNode* n : GraphNodes(graph)) {
    try {
      LowerNode(n, p);
    } catch (Error& e) {
      throw Error{"node " + NodeName(n) + " (" + OpType(n) + "): " + e.msg};
    }
  }
  Fuse(p);
  return p;
}

}  // namespace onnxrl_ep
