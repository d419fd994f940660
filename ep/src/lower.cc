// Lowering ONNX nodes to plan steps: the registry of per-operator lowerings (ops/*.cc register
// theirs), the helpers they share, and BuildPlan.
#include <cstdio>
#include <cstdlib>
#include <map>

#include "host.h"
#include "lower_util.h"

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

// Lowerings is the table of op type to lowering, built by the OpRegistrars at load time (a
// function-local static, so it exists before any registrar runs).
std::map<std::string, LowerFn>& Lowerings() {
  static std::map<std::string, LowerFn> table;
  return table;
}

void RequireFloat(const OrtValueInfo* v) {
  auto t = ElemType(v);
  if (t != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
    Unsupported("input " + ValueName(v) + " has element type " + std::to_string(t) + ", want float32");
  }
}

}  // namespace

OpRegistrar::OpRegistrar(std::initializer_list<const char*> op_types, LowerFn fn) {
  for (const char* op : op_types) {
    if (fn == nullptr || !Lowerings().emplace(op, fn).second) {
      std::fprintf(stderr, "onnxrl_ep: operator %s registered %s\n", op, fn == nullptr ? "without a lowering" : "twice");
      std::abort();
    }
  }
}

const LowerFn* FindLowering(const std::string& op_type) {
  auto it = Lowerings().find(op_type);
  return it == Lowerings().end() ? nullptr : &it->second;
}

std::vector<std::string> RegisteredOps() {
  std::vector<std::string> ops;
  for (const auto& [op, fn] : Lowerings()) ops.push_back(op);
  return ops;
}

void Unsupported(const std::string& why) { throw Error{why}; }

bool Present(const std::vector<const OrtValueInfo*>& v, size_t i) {
  return i < v.size() && v[i] != nullptr && !ValueName(v[i]).empty();
}

int In(Plan& p, const OrtValueInfo* v) {
  RequireFloat(v);
  // The host loops index at most kMaxRank dimensions (InferRun checks the runtime's shapes too).
  if (auto sh = Shape(v); sh && sh->size() > static_cast<size_t>(kMaxRank)) {
    Unsupported("input " + ValueName(v) + " has rank " + std::to_string(sh->size()) + ", above 8");
  }
  int id = p.Id(ValueName(v));
  Value& val = p.values[id];
  if (!val.is_const && IsConstant(v)) {
    val.c = ReadConstant(v);
    val.is_const = true;
  }
  return id;
}

int OptIn(Plan& p, const std::vector<const OrtValueInfo*>& ins, size_t i) {
  return Present(ins, i) ? In(p, ins[i]) : -1;
}

int Out(Plan& p, const OrtValueInfo* v, ONNXTensorElementDataType t) {
  if (v == nullptr || ValueName(v).empty()) return -1;
  int id = p.Id(ValueName(v));
  p.values[id].type = t;
  return id;
}

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

std::vector<int64_t> Ints(const ConstTensor& t, const char* what) {
  if (t.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64) Unsupported(std::string(what) + " is not an integer tensor");
  return t.i;
}

void LowerNode(const OrtNode* n, Plan& p) {
  std::string dom = Domain(n);
  std::string op = OpType(n);
  if (!dom.empty() && dom != "ai.onnx") Unsupported("operator " + dom + "." + op + " is not in the ONNX domain");
  const LowerFn* lower = FindLowering(op);
  if (lower == nullptr) Unsupported("operator " + op + " is not supported");
  (*lower)(n, p);
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
