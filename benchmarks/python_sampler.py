"""Sampler.sample() in a Python loop against `sample run` with the same settings: what the
boundary (ctypes calls, NumPy views of each batch) costs. Alternating rounds on one machine,
env steps/s of each, and the ratio "Python Sampler / sample run steps/s, above 1 = Python faster"
(the goal of issue 34: >= 0.9).

    /usr/bin/python3 benchmarks/python_sampler.py [--num-envs 8 64] [--steps 400000] [--rounds 5]
        [--model cartpole_mlp] [--workers 1] [--sample bin/sample]

Both sides sample the same batches (same env, policy, seed, fragment length, workers: the
batches are equal, as python/tests/test_sampler.py checks) and keep none: `sample run` without
--out counts each batch and gives it back; the Python loop reads each batch's dict of views and
its rewards' length. `sample run`'s figure is its --json summary's
num_env_steps_sampled_lifetime_throughput (the run loop, without process start and model load); the Python figure times the sample() calls from the
first, after the Sampler is open (model load likewise outside). Not part of `make test`. Needs
libonnxrl_sampler.so (`make native`, or ONNXRL_SAMPLER_LIBRARY) and bin/sample (`make build`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))

from onnxrl_sampler import Sampler  # noqa: E402


def run_cli(sample: str, env: str, model: str, n: int, workers: int, fragment: int, steps: int, seed: int) -> float:
    p = subprocess.run([sample, "run", "--env", env, "--model", model, "--num-envs", str(n), "--workers", str(workers),
                        "--fragment-length", str(fragment), "--steps", str(steps), "--seed", str(seed), "--json",
                        "--progress=false"], cwd=REPO, capture_output=True, text=True, check=True)
    return float(json.loads(p.stdout.strip().splitlines()[-1])["num_env_steps_sampled_lifetime_throughput"])


def run_python(env: str, model: str, n: int, workers: int, fragment: int, steps: int, seed: int) -> float:
    with Sampler(env=env, policy=model, num_envs=n, workers=workers, fragment_length=fragment, seed=seed) as s:
        done = 0
        t0 = time.perf_counter()
        while done < steps:
            batch = s.sample()
            done += len(batch["rewards"])
        return done / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", default="CartPole-v1")
    ap.add_argument("--model", default="cartpole_mlp")
    ap.add_argument("--num-envs", type=int, nargs="+", default=[8, 64])
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--fragment-length", type=int, default=200)
    ap.add_argument("--steps", type=int, default=400_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sample", default=os.path.join(REPO, "bin", "sample"))
    a = ap.parse_args()
    print(f"{a.env}, model {a.model}, workers {a.workers}, fragment {a.fragment_length}, {a.steps} steps a run, "
          f"{a.rounds} alternating rounds")
    for n in a.num_envs:
        cli, py = [], []
        for r in range(a.rounds):
            # Alternate which goes first, so that neither always meets a warmer machine.
            order = [("cli", cli), ("py", py)] if r % 2 == 0 else [("py", py), ("cli", cli)]
            for name, out in order:
                if name == "cli":
                    out.append(run_cli(a.sample, a.env, a.model, n, a.workers, a.fragment_length, a.steps, a.seed))
                else:
                    out.append(run_python(a.env, a.model, n, a.workers, a.fragment_length, a.steps, a.seed))
        ratios = [p / c for p, c in zip(py, cli)]
        print(f"num_envs={n}: sample run {statistics.median(cli) / 1e6:.2f}M steps/s "
              f"({min(cli) / 1e6:.2f}-{max(cli) / 1e6:.2f}), Python Sampler {statistics.median(py) / 1e6:.2f}M "
              f"({min(py) / 1e6:.2f}-{max(py) / 1e6:.2f})")
        print(f"  Python Sampler / sample run steps/s, above 1 = Python faster: median {statistics.median(ratios):.3f} "
              f"(rounds: {', '.join(f'{x:.3f}' for x in ratios)})")


if __name__ == "__main__":
    main()
