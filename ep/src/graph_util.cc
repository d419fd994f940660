#include "graph_util.h"

namespace onnxrl_ep {

std::vector<const OrtNode*> GraphNodes(const OrtGraph* g) {
  size_t n = 0;
  Check(g_ort->Graph_GetNumNodes(g, &n), "Graph_GetNumNodes");
  std::vector<const OrtNode*> nodes(n);
  if (n > 0) Check(g_ort->Graph_GetNodes(g, nodes.data(), n), "Graph_GetNodes");
  return nodes;
}

std::string OpType(const OrtNode* n) {
  const char* s = nullptr;
  Check(g_ort->Node_GetOperatorType(n, &s), "Node_GetOperatorType");
  return s ? s : "";
}

std::string NodeName(const OrtNode* n) {
  const char* s = nullptr;
  Check(g_ort->Node_GetName(n, &s), "Node_GetName");
  return s ? s : "";
}

std::string Domain(const OrtNode* n) {
  const char* s = nullptr;
  Check(g_ort->Node_GetDomain(n, &s), "Node_GetDomain");
  return s ? s : "";
}

int SinceVersion(const OrtNode* n) {
  int v = 0;
  Check(g_ort->Node_GetSinceVersion(n, &v), "Node_GetSinceVersion");
  return v;
}

std::vector<const OrtValueInfo*> NodeInputs(const OrtNode* n) {
  size_t k = 0;
  Check(g_ort->Node_GetNumInputs(n, &k), "Node_GetNumInputs");
  std::vector<const OrtValueInfo*> v(k);
  if (k > 0) Check(g_ort->Node_GetInputs(n, v.data(), k), "Node_GetInputs");
  return v;
}

std::vector<const OrtValueInfo*> NodeOutputs(const OrtNode* n) {
  size_t k = 0;
  Check(g_ort->Node_GetNumOutputs(n, &k), "Node_GetNumOutputs");
  std::vector<const OrtValueInfo*> v(k);
  if (k > 0) Check(g_ort->Node_GetOutputs(n, v.data(), k), "Node_GetOutputs");
  return v;
}

std::string ValueName(const OrtValueInfo* v) {
  if (v == nullptr) return "";
  const char* s = nullptr;
  Check(g_ort->GetValueInfoName(v, &s), "GetValueInfoName");
  return s ? s : "";
}

static const OrtTensorTypeAndShapeInfo* TensorInfo(const OrtValueInfo* v) {
  if (v == nullptr) return nullptr;
  const OrtTypeInfo* ti = nullptr;
  Check(g_ort->GetValueInfoTypeInfo(v, &ti), "GetValueInfoTypeInfo");
  if (ti == nullptr) return nullptr;
  const OrtTensorTypeAndShapeInfo* tsi = nullptr;
  OrtStatus* st = g_ort->CastTypeInfoToTensorInfo(ti, &tsi);
  if (st != nullptr) {
    g_ort->ReleaseStatus(st);
    return nullptr;
  }
  return tsi;
}

ONNXTensorElementDataType ElemType(const OrtValueInfo* v) {
  const OrtTensorTypeAndShapeInfo* tsi = TensorInfo(v);
  if (tsi == nullptr) return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  ONNXTensorElementDataType t = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  Check(g_ort->GetTensorElementType(tsi, &t), "GetTensorElementType");
  return t;
}

std::optional<std::vector<int64_t>> Shape(const OrtValueInfo* v) {
  const OrtTensorTypeAndShapeInfo* tsi = TensorInfo(v);
  if (tsi == nullptr) return std::nullopt;
  size_t rank = 0;
  Check(g_ort->GetDimensionsCount(tsi, &rank), "GetDimensionsCount");
  std::vector<int64_t> dims(rank);
  if (rank > 0) Check(g_ort->GetDimensions(tsi, dims.data(), rank), "GetDimensions");
  return dims;
}

bool IsConstant(const OrtValueInfo* v) {
  if (v == nullptr) return false;
  bool c = false;
  Check(g_ort->ValueInfo_IsConstantInitializer(v, &c), "ValueInfo_IsConstantInitializer");
  return c;
}

const OrtNode* Producer(const OrtValueInfo* v) {
  if (v == nullptr) return nullptr;
  const OrtNode* p = nullptr;
  size_t idx = 0;
  Check(g_ort->ValueInfo_GetValueProducer(v, &p, &idx), "ValueInfo_GetValueProducer");
  return p;
}

size_t NodeId(const OrtNode* n) {
  size_t id = 0;
  Check(g_ort->Node_GetId(n, &id), "Node_GetId");
  return id;
}

int64_t ConstTensor::size() const {
  int64_t s = 1;
  for (int64_t d : shape) s *= d;
  return s;
}

ConstTensor ReadValue(const OrtValue* val) {
  ConstTensor t;
  ONNXTensorElementDataType type;
  const int64_t* dims = nullptr;
  size_t rank = 0;
  Check(g_ort->GetTensorElementTypeAndShapeDataReference(val, &type, &dims, &rank),
        "GetTensorElementTypeAndShapeDataReference");
  t.type = type;
  t.shape.assign(dims, dims + rank);
  const void* data = nullptr;
  Check(g_ort->GetTensorData(val, &data), "GetTensorData");
  int64_t n = t.size();
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: {
      const float* p = static_cast<const float*>(data);
      t.f.assign(p, p + n);
      break;
    }
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: {
      const int64_t* p = static_cast<const int64_t*>(data);
      t.i.assign(p, p + n);
      break;
    }
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: {
      const int32_t* p = static_cast<const int32_t*>(data);
      t.i.assign(p, p + n);
      t.type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
      break;
    }
    default:
      throw Error{"constant of unsupported element type " + std::to_string(type)};
  }
  return t;
}

ConstTensor ReadConstant(const OrtValueInfo* v) {
  const OrtValue* val = nullptr;
  Check(g_ort->ValueInfo_GetInitializerValue(v, &val), "ValueInfo_GetInitializerValue");
  if (val == nullptr) throw Error{"initializer " + ValueName(v) + " has no value"};
  return ReadValue(val);
}

static const OrtOpAttr* Attr(const OrtNode* n, const char* name) {
  const OrtOpAttr* a = nullptr;
  OrtStatus* st = g_ort->Node_GetAttributeByName(n, name, &a);
  if (st != nullptr) {
    g_ort->ReleaseStatus(st);
    return nullptr;
  }
  return a;
}

bool HasAttr(const OrtNode* n, const char* name) { return Attr(n, name) != nullptr; }

int64_t AttrInt(const OrtNode* n, const char* name, int64_t def) {
  const OrtOpAttr* a = Attr(n, name);
  if (a == nullptr) return def;
  int64_t v = 0;
  size_t out = 0;
  Check(g_ort->ReadOpAttr(a, ORT_OP_ATTR_INT, &v, sizeof v, &out), name);
  return v;
}

float AttrFloat(const OrtNode* n, const char* name, float def) {
  const OrtOpAttr* a = Attr(n, name);
  if (a == nullptr) return def;
  float v = 0;
  size_t out = 0;
  Check(g_ort->ReadOpAttr(a, ORT_OP_ATTR_FLOAT, &v, sizeof v, &out), name);
  return v;
}

std::string AttrString(const OrtNode* n, const char* name, const std::string& def) {
  const OrtOpAttr* a = Attr(n, name);
  if (a == nullptr) return def;
  size_t out = 0;
  OrtStatus* st = g_ort->ReadOpAttr(a, ORT_OP_ATTR_STRING, nullptr, 0, &out);
  if (st != nullptr) g_ort->ReleaseStatus(st);
  std::string s(out, '\0');
  if (out > 0) Check(g_ort->ReadOpAttr(a, ORT_OP_ATTR_STRING, s.data(), s.size(), &out), name);
  s.resize(out);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::optional<std::vector<int64_t>> AttrInts(const OrtNode* n, const char* name) {
  const OrtOpAttr* a = Attr(n, name);
  if (a == nullptr) return std::nullopt;
  size_t out = 0;
  OrtStatus* st = g_ort->ReadOpAttr(a, ORT_OP_ATTR_INTS, nullptr, 0, &out);
  if (st != nullptr) g_ort->ReleaseStatus(st);
  std::vector<int64_t> v(out / sizeof(int64_t));
  if (!v.empty()) {
    Check(g_ort->ReadOpAttr(a, ORT_OP_ATTR_INTS, v.data(), v.size() * sizeof(int64_t), &out), name);
  }
  return v;
}

std::optional<std::vector<std::string>> AttrStrings(const OrtNode* n, const char* name) {
  const OrtOpAttr* a = Attr(n, name);
  if (a == nullptr) return std::nullopt;
  size_t out = 0;
  OrtStatus* st = g_ort->ReadOpAttr(a, ORT_OP_ATTR_STRINGS, nullptr, 0, &out);
  if (st != nullptr) g_ort->ReleaseStatus(st);
  std::string buf(out, '\0');
  if (out > 0) Check(g_ort->ReadOpAttr(a, ORT_OP_ATTR_STRINGS, buf.data(), buf.size(), &out), name);
  // The strings come NUL-separated.
  std::vector<std::string> v;
  size_t start = 0;
  for (size_t i = 0; i < out; i++) {
    if (buf[i] == '\0') {
      v.push_back(buf.substr(start, i - start));
      start = i + 1;
    }
  }
  if (start < out) v.push_back(buf.substr(start, out - start));
  return v;
}

std::optional<ConstTensor> AttrTensor(const OrtNode* n, const char* name) {
  const OrtOpAttr* a = Attr(n, name);
  if (a == nullptr) return std::nullopt;
  OrtValue* v = nullptr;
  Check(g_ort->OpAttr_GetTensorAttributeAsOrtValue(a, &v), name);
  if (v == nullptr) return std::nullopt;
  ConstTensor t;
  try {
    t = ReadValue(v);
  } catch (...) {
    g_ort->ReleaseValue(v);
    throw;
  }
  g_ort->ReleaseValue(v);
  return t;
}

}  // namespace onnxrl_ep
