"""CartPole episodes against `sample serve` with PolicyClient (RLlib's client loop): start an
episode, ask for an action each step, log the reward, end the episode. Standard library HTTP
and NumPy only: no library to load on the simulator's side.

    ./bin/sample serve --model cartpole_mlp --out /tmp/served.jsonl &
    /usr/bin/python3 examples/python/policy_client_loop.py --url http://127.0.0.1:8900 --episodes 5
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))  # the package from the source tree
sys.path.insert(0, HERE)

from onnxrl_sampler import PolicyClient  # noqa: E402
from vec_cartpole import VecCartPole  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8900")
    ap.add_argument("--episodes", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    sim = VecCartPole(1, a.seed)
    with PolicyClient(a.url) as client:
        for _ in range(a.episodes):
            eid = client.start_episode()
            total = 0.0
            while True:
                action = client.get_action(eid, sim.obs[0])
                rewards, terminated, truncated = sim.step(np.array([action], np.float32))
                client.log_returns(eid, float(rewards[0]))
                total += float(rewards[0])
                if terminated[0] or truncated[0]:
                    client.end_episode(eid, sim.obs[0], truncated=bool(truncated[0]))
                    sim.reset(np.ones(1, bool))
                    break
            print(f"episode {eid}: return {total:g}")


if __name__ == "__main__":
    main()
