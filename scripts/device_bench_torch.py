#!/usr/bin/env python3
"""PyTorch's side of the CUDA backend's speed check (scripts/device-check.sh).

Runs the bundled MLP and LSTM policies' architectures (models/export/export_models.py; speed
does not depend on the weights) on the GPU at batch 256, 4096 and 65536, taking NumPy float32
inputs on the host and returning NumPy outputs, as a sampler does, in three modes:
  eager      host -> GPU copy, forward, GPU -> host copy, each batch
  graph      the same copies (through pinned buffers) around a CUDA graph replay
  resident   the graph replay alone, inputs and outputs left on the GPU (a floor, for reference)
Prints one JSON object per line: model, batch, mode, us_per_batch, samples_per_s.
"""
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "export"))
from export_models import CartPoleMLP, LSTMPolicy  # noqa: E402

BATCHES = (256, 4096, 65536)
SECONDS = float(os.environ.get("BENCH_SECONDS", "0.5"))


def timed(fn):
    """Mean seconds per call of fn over about SECONDS, after a warm-up."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        el = time.perf_counter() - t0
        if el >= SECONDS and n >= 5:
            return el / n


def host_inputs(model, batch, rng):
    if model == "cartpole_mlp":
        return [rng.standard_normal((batch, 4), dtype=np.float32)]
    return [rng.standard_normal((batch, 2), dtype=np.float32),
            rng.standard_normal((1, batch, 32), dtype=np.float32),
            rng.standard_normal((1, batch, 32), dtype=np.float32)]


def main():
    dev = torch.device("cuda:0")
    print(json.dumps({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}), flush=True)
    rng = np.random.default_rng(1)
    for name, cls in (("cartpole_mlp", CartPoleMLP), ("lstm_policy", LSTMPolicy)):
        net = cls().to(dev).eval()
        for batch in BATCHES:
            xs = host_inputs(name, batch, rng)
            with torch.inference_mode():
                def eager():
                    outs = net(*[torch.from_numpy(x).to(dev) for x in xs])
                    return [o.cpu().numpy() for o in outs]

                pinned_in = [torch.from_numpy(x).pin_memory() for x in xs]
                static_in = [p.to(dev) for p in pinned_in]
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(3):
                        net(*static_in)
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    static_out = net(*static_in)
                pinned_out = [torch.empty(o.shape, dtype=o.dtype, pin_memory=True) for o in static_out]

                def graph():
                    for x, p, d in zip(xs, pinned_in, static_in):
                        p.numpy()[...] = x
                        d.copy_(p, non_blocking=True)
                    g.replay()
                    for o, p in zip(static_out, pinned_out):
                        p.copy_(o, non_blocking=True)
                    torch.cuda.current_stream().synchronize()
                    return [p.numpy() for p in pinned_out]

                def resident():
                    g.replay()
                    torch.cuda.current_stream().synchronize()

                for mode, fn in (("eager", eager), ("graph", graph), ("resident", resident)):
                    sec = timed(fn)
                    print(json.dumps({"model": name, "batch": batch, "mode": mode,
                                      "us_per_batch": round(sec * 1e6, 2),
                                      "samples_per_s": round(batch / sec)}), flush=True)


if __name__ == "__main__":
    main()
