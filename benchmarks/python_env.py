"""The vectorized NumPy CartPole through Env.get_actions against the same env with the policy
evaluated in NumPy, alternating rounds in one process; reports env steps/s of both and their ratio.

    /usr/bin/python3 benchmarks/python_env.py [--num-envs 256] [--steps 200] [--rounds 6]

"sampler": examples/python/env_get_actions.py's loop: per step one Env.get_actions for all
episodes (one batched inference by the sampler, greedy, recording nothing), one log_returns_batch
for all, end_episode/start_episode for those that ended. "numpy": the bundled cartpole_mlp's
weights (read from the ONNX file) evaluated with NumPy (float32 matmuls, tanh, argmax), the same
env, nothing else. Before timing, the NumPy policy is checked against Policy.act on a batch
(the same actions), so both compute the same thing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "examples", "python"))

from env_get_actions import run  # noqa: E402
from onnxrl_sampler import Env, Policy  # noqa: E402
from vec_cartpole import VecCartPole  # noqa: E402


def _varint(b: bytes, i: int) -> tuple[int, int]:
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def _fields(b: bytes):
    """The (field number, value) pairs of a protobuf message (varints and length-delimited)."""
    i = 0
    while i < len(b):
        k, i = _varint(b, i)
        f, w = k >> 3, k & 7
        if w == 0:
            v, i = _varint(b, i)
        elif w == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        elif w == 5:
            v, i = b[i:i + 4], i + 4
        elif w == 1:
            v, i = b[i:i + 8], i + 8
        else:
            raise ValueError(f"protobuf wire type {w}")
        yield f, v


def onnx_initializers(path: str) -> dict[str, np.ndarray]:
    """The float32 initializers (raw_data) of an ONNX model: ModelProto.graph (7) ->
    GraphProto.initializer (5) -> TensorProto dims (1), name (8), raw_data (9)."""
    out = {}
    for f, graph in _fields(open(path, "rb").read()):
        if f != 7:
            continue
        for g, t in _fields(graph):
            if g != 5:
                continue
            dims, name, raw = [], "", b""
            for h, v in _fields(t):
                if h == 1:
                    dims.append(v)
                elif h == 8:
                    name = v.decode()
                elif h == 9:
                    raw = v
            out[name] = np.frombuffer(raw, np.float32).reshape(dims)
    return out


class NumpyMLP:
    """cartpole_mlp in NumPy: greedy actions of a 64-64 tanh MLP (models/export/export_models.py)."""

    def __init__(self, path: str) -> None:
        w = onnx_initializers(path)
        self.w1, self.b1 = w["body.0.weight"].T.copy(), w["body.0.bias"]
        self.w2, self.b2 = w["body.2.weight"].T.copy(), w["body.2.bias"]
        self.wp, self.bp = w["pi.weight"].T.copy(), w["pi.bias"]

    def act(self, obs: np.ndarray, out: np.ndarray) -> np.ndarray:
        h = np.tanh(obs @ self.w1 + self.b1)
        h = np.tanh(h @ self.w2 + self.b2)
        out[:, 0] = (h @ self.wp + self.bp).argmax(1)
        return out


def run_numpy(policy: NumpyMLP, n: int, steps: int, seed: int = 0) -> float:
    """Env steps/s of the NumPy policy on the same env."""
    sim = VecCartPole(n, seed)
    actions = np.empty((n, 1), np.float32)
    returns = np.zeros(n)
    start = time.perf_counter()
    for _ in range(steps):
        policy.act(sim.obs, actions)
        rewards, terminated, truncated = sim.step(actions)
        returns += rewards
        done = terminated | truncated
        returns[done] = 0
        sim.reset(done)
    return n * steps / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--num-envs", type=int, default=256)
    ap.add_argument("--steps", type=int, default=200, help="steps of every env per round")
    ap.add_argument("--rounds", type=int, default=6)
    a = ap.parse_args()
    model = os.path.join(REPO, "models", "cartpole_mlp.onnx")
    np_policy = NumpyMLP(model)
    obs = np.random.default_rng(0).uniform(-0.2, 0.2, (1024, 4)).astype(np.float32)
    with Policy(model) as p:
        want = p.act(obs)
    got = np_policy.act(obs, np.empty((1024, 1), np.float32))
    if not np.array_equal(got, want):
        raise SystemExit(f"the NumPy policy differs from Policy.act on {int((got != want).sum())} of 1024 observations")
    sampler, numpy_, sampler_cpu, numpy_cpu = [], [], [], []
    steps = a.num_envs * a.steps
    with Env(model, max_episodes=a.num_envs, explore=False) as env:
        run(env, a.num_envs, 20)  # warm up both
        run_numpy(np_policy, a.num_envs, 20)
        for r in range(a.rounds):
            cpu = time.process_time()
            sampler.append(run(env, a.num_envs, a.steps, seed=r)["steps_per_sec"])
            sampler_cpu.append(steps / (time.process_time() - cpu))
            cpu = time.process_time()
            numpy_.append(run_numpy(np_policy, a.num_envs, a.steps, seed=r))
            numpy_cpu.append(steps / (time.process_time() - cpu))
    # Process CPU time counts every thread (the sampler's goroutines, BLAS threads), and not
    # the time spent waiting for a core: steady on a busy machine.
    for what, f in (("median", np.median), ("best", np.max)):
        s, n = float(f(sampler)), float(f(numpy_))
        print(f"num_envs {a.num_envs}, {a.steps} steps x {a.rounds} rounds ({what}): "
              f"sampler {s:.0f} env steps/s, numpy {n:.0f} env steps/s, sampler/numpy {s / n:.2f}")
    s, n = float(np.max(sampler_cpu)), float(np.max(numpy_cpu))
    print(f"per CPU second (process CPU time, best round): sampler {s:.0f} env steps, numpy {n:.0f}, "
          f"sampler/numpy {s / n:.2f}")


if __name__ == "__main__":
    main()
