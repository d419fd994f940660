// Reading the runtime's graph view (OrtGraph, OrtNode, OrtValueInfo): names, types, shapes,
// constant initializers and attributes. Valid only while the runtime's call that handed out the
// graph (GetCapability, Compile) lasts; everything returned here is a copy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ort.h"

namespace onnxrl_ep {

std::vector<const OrtNode*> GraphNodes(const OrtGraph* g);
std::string OpType(const OrtNode* n);
std::string NodeName(const OrtNode* n);
std::string Domain(const OrtNode* n);
int SinceVersion(const OrtNode* n);
// Inputs and outputs; a missing optional one is nullptr.
std::vector<const OrtValueInfo*> NodeInputs(const OrtNode* n);
std::vector<const OrtValueInfo*> NodeOutputs(const OrtNode* n);

std::string ValueName(const OrtValueInfo* v);
// The element type (ONNX_TENSOR_ELEMENT_DATA_TYPE_*), UNDEFINED when not a tensor.
ONNXTensorElementDataType ElemType(const OrtValueInfo* v);
// The shape with -1 for symbolic dimensions; nullopt when the rank is unknown.
std::optional<std::vector<int64_t>> Shape(const OrtValueInfo* v);
bool IsConstant(const OrtValueInfo* v);
// The node producing v (nullptr for graph inputs and initializers).
const OrtNode* Producer(const OrtValueInfo* v);
size_t NodeId(const OrtNode* n);

// A constant initializer's data, converted: floats for FLOAT, int64 for INT64/INT32.
struct ConstTensor {
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<int64_t> shape;
  std::vector<float> f;
  std::vector<int64_t> i;
  int64_t size() const;
};
ConstTensor ReadConstant(const OrtValueInfo* v);
ConstTensor ReadValue(const OrtValue* v);

// Attributes; the default when the node does not have it.
int64_t AttrInt(const OrtNode* n, const char* name, int64_t def);
float AttrFloat(const OrtNode* n, const char* name, float def);
std::string AttrString(const OrtNode* n, const char* name, const std::string& def);
std::optional<std::vector<int64_t>> AttrInts(const OrtNode* n, const char* name);
std::optional<std::vector<std::string>> AttrStrings(const OrtNode* n, const char* name);
std::optional<ConstTensor> AttrTensor(const OrtNode* n, const char* name);
bool HasAttr(const OrtNode* n, const char* name);

}  // namespace onnxrl_ep
