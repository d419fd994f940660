"""make_vec("CartPole-v1", N) stepped from Python with random actions, against the NumPy
CartPole of benchmarks/baselines (numpy_sampler.VecCartPole) and, when it imports, EnvPool's
CartPole (envpool.make("CartPole-v1", env_type="gymnasium", num_envs=N)); alternating rounds in
one process, env steps/s of each and the ratios "ours/theirs steps/s, above 1 = ours faster".

    /usr/bin/python3 benchmarks/python_make_vec.py [--num-envs 256 4096] [--seconds 1] [--rounds 5]
    .venv-envpool/bin/python benchmarks/python_make_vec.py      # with EnvPool (pip install envpool)

Each contender steps all N sub-environments per call with actions drawn in advance (a ring of
16 random arrays, so no contender pays for the random numbers) and autoresets as it does by
itself: make_vec with gymnasium's next-step mode (copy=True: fresh arrays every step, as
gymnasium's SyncVectorEnv), VecCartPole resetting ended rows in the same step, EnvPool in its
own mode with its default threads (its own C++ thread pool; make_vec steps on the calling
thread). Not part of `make test`. Needs libonnxrl_sampler.so (`make native`, or
ONNXRL_SAMPLER_LIBRARY).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Callable

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "benchmarks", "baselines"))

from numpy_sampler import VecCartPole  # noqa: E402
from onnxrl_sampler import make_vec  # noqa: E402

RING = 16


def contenders(n: int, seed: int, envpool_threads: int) -> dict[str, Callable[[int], int]]:
    """name -> run(steps) that steps that many times and returns env steps taken."""
    rng = np.random.default_rng(seed)
    ints = [rng.integers(0, 2, n).astype(np.int64) for _ in range(RING)]
    out: dict[str, Callable[[int], int]] = {}

    ours = make_vec("CartPole-v1", n, seed=seed)
    ours.reset()

    def run_ours(steps: int) -> int:
        step = ours.step
        for k in range(steps):
            step(ints[k % RING])
        return steps * n

    out["make_vec"] = run_ours

    cp = VecCartPole(n, np.random.default_rng(seed))

    def run_numpy(steps: int) -> int:
        step = cp.step
        for k in range(steps):
            step(ints[k % RING])
        return steps * n

    out["numpy"] = run_numpy

    try:
        import envpool
    except ImportError:
        print("envpool does not import in this interpreter: EnvPool left out", file=sys.stderr)
        return out
    kw = {"num_threads": envpool_threads} if envpool_threads else {}
    ep = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=n, seed=seed, **kw)
    ep.reset()
    ep_ints = [a.astype(np.int32) for a in ints]

    def run_envpool(steps: int) -> int:
        step = ep.step
        for k in range(steps):
            step(ep_ints[k % RING])
        return steps * n

    out["envpool"] = run_envpool
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--num-envs", type=int, nargs="+", default=[256, 4096])
    ap.add_argument("--seconds", type=float, default=1.0, help="about this long per contender and round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--envpool-threads", type=int, default=0, help="EnvPool's num_threads (0: its default)")
    args = ap.parse_args()
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} CPUs")
    for n in args.num_envs:
        runs = contenders(n, args.seed, args.envpool_threads)
        steps = {}
        for name, run in runs.items():  # calibrate: steps for about --seconds, after a warm-up
            run(20)
            t = time.perf_counter()
            run(50)
            steps[name] = max(20, int(50 * args.seconds / (time.perf_counter() - t)))
        rates: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.rounds):  # alternating: each contender once per round
            for name, run in runs.items():
                t = time.perf_counter()
                k = run(steps[name])
                rates[name].append(k / (time.perf_counter() - t))
        print(f"\nCartPole-v1, num_envs={n}, {args.rounds} alternating rounds (median, min-max env steps/s):")
        for name, r in rates.items():
            print(f"  {name:9s} {statistics.median(r):14,.0f}   ({min(r):,.0f} - {max(r):,.0f})")
        for other in runs:
            if other != "make_vec":
                ratios = [a / b for a, b in zip(rates["make_vec"], rates[other])]
                print(f"  make_vec/{other} (ours/theirs steps/s, above 1 = ours faster): "
                      f"{statistics.median(ratios):.2f} (per round {min(ratios):.2f} - {max(ratios):.2f})")


if __name__ == "__main__":
    main()
