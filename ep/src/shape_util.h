// Shape arithmetic the kernels share.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ort.h"

namespace onnxrl_ep {

inline int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// NormAxis is axis counted from the front of a rank-dimensional shape; it throws Error naming
// node when axis is out of range.
inline int64_t NormAxis(int64_t axis, size_t rank, const std::string& node) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) throw Error{"node " + node + ": axis " + std::to_string(axis) + " out of range"};
  return axis < 0 ? axis + r : axis;
}

// OuterInner returns the products of shape's dimensions before and after axis ax.
inline std::pair<int64_t, int64_t> OuterInner(const std::vector<int64_t>& shape, int64_t ax) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); d++) {
    if (d < ax) outer *= shape[d];
    if (d > ax) inner *= shape[d];
  }
  return {outer, inner};
}

// Strides are shape's row-major element strides.
inline std::vector<int64_t> Strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    st[i] = acc;
    acc *= shape[i];
  }
  return st;
}

// ElemSize is the bytes per element of the plan's element types (float32 and int64).
inline size_t ElemSize(ONNXTensorElementDataType t) { return t == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 ? 8 : 4; }

}  // namespace onnxrl_ep
