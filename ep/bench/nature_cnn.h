// The convolution layers of a Nature CNN (4x84x84 -> 32 8x8/4 -> 64 4x4/2 -> 64 3x3/1), which
// conv_gather.cc and conv_layers.cc time.
#ifndef ONNXRL_EP_BENCH_NATURE_CNN_H_
#define ONNXRL_EP_BENCH_NATURE_CNN_H_

#include <cstdint>

namespace onnxrl_ep_bench {

struct Layer {
  int64_t C, H, W, OC, k, s;  // input channels, height, width; output channels; kernel; stride
};

inline constexpr Layer kNatureCnn[] = {{4, 84, 84, 32, 8, 4}, {32, 20, 20, 64, 4, 2}, {64, 9, 9, 64, 3, 1}};

}  // namespace onnxrl_ep_bench

#endif  // ONNXRL_EP_BENCH_NATURE_CNN_H_
