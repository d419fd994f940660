// Shape arithmetic the kernels share.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ort.h"

namespace onnxrl_ep {

// kMaxElements bounds the elements of every tensor a plan handles (2^60): the bytes of a
// float32 or int64 tensor, and every partial product and stride of its dimensions, fit in int64.
constexpr int64_t kMaxElements = int64_t{1} << 60;

// ShapeString is shape as "[2, 3]", for messages.
inline std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); i++) s += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// CheckedMul sets *out to a * b; false when that overflows int64.
inline bool CheckedMul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
// CheckedAdd sets *out to a + b; false when that overflows int64.
inline bool CheckedAdd(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }

// CheckedNumElements is shape's element count. It throws Error naming node and the shape when
// a dimension is negative or when the product of the non-zero dimensions exceeds kMaxElements,
// so that every product of a checked shape's dimensions (NumElements, OuterInner, Strides, byte
// sizes) fits in int64, zero-sized dimensions or not. InferRun checks every shape of a plan
// with it (inputs, and each step's outputs as they are set).
inline int64_t CheckedNumElements(const std::vector<int64_t>& shape, const std::string& node) {
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) throw Error{"node " + node + ": shape " + ShapeString(shape) + " has a negative dimension"};
    if (d == 0) {
      empty = true;
    } else if (!CheckedMul(n, d, &n) || n > kMaxElements) {
      throw Error{"node " + node + ": shape " + ShapeString(shape) + " has more elements than a tensor may hold"};
    }
  }
  return empty ? 0 : n;
}

// NumElements is the element count of a shape CheckedNumElements accepted (every shape of a
// planned run); unchecked.
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

// MatrixRows is the product of every dimension but the last: the rows a matrix multiply sees
// (the last dimension, K, may be 0).
inline int64_t MatrixRows(const std::vector<int64_t>& shape) {
  int64_t m = 1;
  for (size_t d = 0; d + 1 < shape.size(); d++) m *= shape[d];
  return m;
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
