// RandomFloats draws a bench's inputs and weights: uniform in [-bound, bound) from one
// generator of a fixed seed, so that every run times the same values.
#ifndef ONNXRL_EP_BENCH_RANDOM_FLOATS_H_
#define ONNXRL_EP_BENCH_RANDOM_FLOATS_H_

#include <cstdint>
#include <random>
#include <vector>

namespace onnxrl_ep_bench {

class RandomFloats {
 public:
  explicit RandomFloats(float bound) : rng_(1), u_(-bound, bound) {}

  // n values, the generator's next ones.
  std::vector<float> operator()(int64_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = u_(rng_);
    return v;
  }

 private:
  std::mt19937 rng_;
  std::uniform_real_distribution<float> u_;
};

}  // namespace onnxrl_ep_bench

#endif  // ONNXRL_EP_BENCH_RANDOM_FLOATS_H_
