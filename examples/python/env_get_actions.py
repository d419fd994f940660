"""A vectorized NumPy CartPole driven through Env.get_actions: every step, one call asks the
sampler for the actions of all running episodes (one batched inference), rewards are logged
per episode, and ended episodes are ended and replaced by new ones. The sampler records the
transitions (RLlib's offline JSON lines) when --out is given.

    make native   # builds build/lib/libonnxrl_sampler.so
    /usr/bin/python3 examples/python/env_get_actions.py --num-envs 256 --steps 2000 --out /tmp/cartpole.jsonl
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))  # the package from the source tree
sys.path.insert(0, HERE)

from onnxrl_sampler import Env  # noqa: E402
from vec_cartpole import VecCartPole  # noqa: E402


def run(env: Env, n: int, steps: int, seed: int = 0) -> dict[str, float]:
    """Runs n CartPoles for `steps` steps through env; returns the figures of the run."""
    sim = VecCartPole(n, seed)
    ids = [env.start_episode() for _ in range(n)]
    actions = np.empty(n, np.int64)  # Discrete(2): one int per episode
    returns = np.zeros(n)
    finished: list[float] = []
    start = time.perf_counter()
    for _ in range(steps):
        env.get_actions(ids, sim.obs, out=actions)
        rewards, terminated, truncated = sim.step(actions)
        returns += rewards
        env.log_returns_batch(ids, rewards)
        for i in np.flatnonzero(terminated | truncated):
            env.end_episode(ids[i], sim.obs[i], truncated=bool(truncated[i]))
            finished.append(returns[i])
            returns[i] = 0
            ids[i] = env.start_episode()
        sim.reset(terminated | truncated)
    secs = time.perf_counter() - start
    for i, eid in enumerate(ids):
        env.end_episode(eid, sim.obs[i], truncated=True)
    return {"env_steps": n * steps, "steps_per_sec": n * steps / secs, "episodes": len(finished),
            "episode_return_mean": float(np.mean(finished)) if finished else float("nan")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="cartpole_mlp")
    ap.add_argument("--num-envs", type=int, default=64)
    ap.add_argument("--steps", type=int, default=600, help="steps of every environment")
    ap.add_argument("--out", default=None, help="record the sample batches here (.jsonl)")
    ap.add_argument("--explore", action="store_true", help="sample actions (default: greedy)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    with Env(a.model, out=a.out, max_episodes=a.num_envs, explore=a.explore, seed=a.seed) as env:
        res = run(env, a.num_envs, a.steps, a.seed)
    print(", ".join(f"{k} {v:.6g}" for k, v in res.items()))


if __name__ == "__main__":
    main()
