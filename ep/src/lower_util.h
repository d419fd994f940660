// Helpers the op files' lowerings share (defined in lower.cc): reading a node's inputs into the
// plan's values and its constant parameters.
#pragma once

#include <string>
#include <vector>

#include "plan.h"

namespace onnxrl_ep {

// Unsupported throws Error{why}: the node stays on the CPU provider.
[[noreturn]] void Unsupported(const std::string& why);
// Present: input or output i exists (an absent optional one is null or unnamed).
bool Present(const std::vector<const OrtValueInfo*>& v, size_t i);
// In adds a data input (float32) to the plan; constants are copied now.
int In(Plan& p, const OrtValueInfo* v);
// OptIn: an optional float input, -1 when absent.
int OptIn(Plan& p, const std::vector<const OrtValueInfo*>& ins, size_t i);
// Out adds an output of element type t; -1 when absent.
int Out(Plan& p, const OrtValueInfo* v, ONNXTensorElementDataType t = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
// Param reads a constant parameter input (shape, axes, indices, ...).
ConstTensor Param(const OrtValueInfo* v, const char* what);
// ScalarParam reads a constant float scalar input.
float ScalarParam(const OrtValueInfo* v, const char* what);
// Ints is an integer tensor's values.
std::vector<int64_t> Ints(const ConstTensor& t, const char* what);

}  // namespace onnxrl_ep
