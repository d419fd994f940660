// conv_layers times whole convolution steps (ConvKernel::Host, ep/src/ops/conv.cc: the direct
// multiply of conv_gather.cc, or Winograd F(2x2, 2x2) for a kernel twice its stride) on the
// three layers of a Nature CNN (4x84x84 -> 32 8x8/4 -> 64 4x4/2 -> 64 3x3/1, ReLU fused), one
// thread, and prints each layer's best µs over the runs and the direct form's multiply-adds
// per second that time stands for (above this core's FMA peak of some 58.7 billion where
// Winograd does fewer). Not built by make; it links the objects of the ep_ops test:
//
//   cmake --build build --target test_ep_ops && g++ -O3 -std=gnu++17 -Wno-psabi -Iep/src
//       -isystem $(go env GOMODCACHE)/github.com/yalue/onnxruntime_go@v1.27.0 ep/bench/conv_layers.cc
//       $(find build/ep/CMakeFiles/test_ep_ops.dir -name '*.o' ! -name ops_test.cc.o) -ldl
//       -o /tmp/conv_layers && /tmp/conv_layers [images (32)] [runs (5)]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "kernels.h"
#include "nature_cnn.h"
#include "ops/nn.h"
#include "plan.h"

namespace onnxrl_ep {
const OrtApi* g_ort = nullptr;  // no runtime: ParallelFor runs the tasks in this thread
}  // namespace onnxrl_ep

using namespace onnxrl_ep;

using onnxrl_ep_bench::Layer;

int main(int argc, char** argv) {
  const int64_t images = argc > 1 ? std::atoll(argv[1]) : 32;
  const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  const auto& layers = onnxrl_ep_bench::kNatureCnn;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  double total = 0;
  for (const Layer& l : layers) {
    Plan p;
    const int x = p.Id("x"), y = p.Id("y");
    p.values[x].input = 0;
    p.inputs = {x};
    p.values[y].output = 0;
    p.outputs = {y};
    auto k = std::make_unique<ConvKernel>();
    k->node = "conv";
    k->C = l.C;
    k->OC = l.OC;
    k->win.kh = k->win.kw = l.k;
    k->win.sh = k->win.sw = l.s;
    k->w.resize(l.OC * l.C * l.k * l.k);
    for (float& v : k->w) v = 0.1f * u(rng);
    k->bias.resize(l.OC);
    for (float& v : k->bias) v = u(rng);
    k->act = kActRelu;
    k->in = {x};
    k->out = {y};
    p.steps.push_back(std::move(k));
    p.steps[0]->PrepareHost();
    Run r;
    r.shapes.assign(p.values.size(), {});
    r.shapes[x] = {images, l.C, l.H, l.W};
    InferRun(p, r);
    const auto& ys = r.shapes[y];
    std::vector<float> in(images * l.C * l.H * l.W), out(ys[0] * ys[1] * ys[2] * ys[3]);
    for (float& v : in) v = u(rng);
    r.ptr[x] = in.data();
    r.ptr[y] = out.data();
    double best = 1e30;
    for (int run = 0; run < runs; run++) {
      const auto t0 = std::chrono::steady_clock::now();
      ExecContext c{p, r, 0};
      p.steps[0]->Host(c);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    total += best;
    const double macs = double(images) * ys[2] * ys[3] * l.OC * l.C * l.k * l.k;
    std::printf("conv %lldx%lldx%lld -> %lld %lldx%lld/%lld, %lld images: %.0f us, %.1f billion direct multiply-adds/s\n",
                (long long)l.C, (long long)l.H, (long long)l.W, (long long)l.OC, (long long)l.k, (long long)l.k,
                (long long)l.s, (long long)images, best * 1e6, macs / best / 1e9);
  }
  std::printf("all three: %.0f us\n", total * 1e6);
  return 0;
}
