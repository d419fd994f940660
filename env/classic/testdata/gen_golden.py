"""Generate golden trajectories for env/classic from gymnasium itself.

Usage (from env/classic): python3 testdata/gen_golden.py
Needs gymnasium importable (installed, or a source checkout on PYTHONPATH) and numpy.
Each case: make the env with a time limit, reset(seed=0), overwrite env.unwrapped.state with
a fixed float64 state, then step a fixed action sequence (a simple policy evaluated here and
recorded), until the episode ends or the actions run out. The Go test replays the recorded
actions from the same state and compares state, observation, reward and flags step by step.
"""
import json
import math
import sys

import gymnasium as gym
import numpy as np


def run(env_id, state, max_steps, policy, n, kind):
    env = gym.make(env_id, max_episode_steps=max_steps)
    env.reset(seed=0)
    env.unwrapped.state = np.array(state, dtype=np.float64)
    steps = []
    s = np.array(state, dtype=np.float64)
    for t in range(n):
        a = policy(t, s)
        if kind == "discrete":
            act = int(a)
            rec = [float(act)]
        else:
            act = np.array([a], dtype=np.float32)
            rec = [float(act[0])]
        obs, r, term, trunc, _ = env.step(act)
        s = np.array(env.unwrapped.state, dtype=np.float64)
        steps.append({
            "action": rec,
            "state": [float(x) for x in s],
            "obs": [float(x) for x in np.asarray(obs, dtype=np.float32)],
            "reward": float(r),
            "terminated": bool(term),
            "truncated": bool(trunc),
        })
        if term or trunc:
            break
    return {"env": env_id, "max_episode_steps": max_steps, "state": [float(x) for x in state], "steps": steps}


def sign(x):
    return 1 if x >= 0 else -1


cases = [
    # CartPole: alternating pushes until truncation; a fall (termination); a fall on the
    # last step allowed by the time limit (both flags).
    run("CartPole-v1", [0.01, -0.02, 0.03, 0.04], 30,
        lambda t, s: 1 if s[2] + 0.5 * s[3] > 0 else 0, 100, "discrete"),
    run("CartPole-v1", [0.0, 0.1, 0.05, 0.3], 500, lambda t, s: 1, 100, "discrete"),
    run("CartPole-v1", [0.0, 0.1, 0.05, 0.3], 12, lambda t, s: 1, 100, "discrete"),
    run("CartPole-v1", [-2.2, -0.9, -0.02, 0.1], 500, lambda t, s: 0 if t % 3 else 1, 100, "discrete"),
    # Pendulum: torques in and out of range, to truncation; a fast swing hitting max speed.
    run("Pendulum-v1", [math.pi - 0.3, 0.5], 40,
        lambda t, s: [2.0, -2.0, 0.37, -1.25, 3.5, -7.0, 0.0, 1.999][t % 8], 100, "continuous"),
    run("Pendulum-v1", [0.5, 7.9], 25, lambda t, s: 2.0 * sign(s[1]), 100, "continuous"),
    # MountainCar: energy pumping to the goal; the left wall; truncation.
    run("MountainCar-v0", [-0.5, 0.0], 200, lambda t, s: 2 if s[1] >= 0 else 0, 300, "discrete"),
    run("MountainCar-v0", [-1.15, -0.05], 30, lambda t, s: 0, 100, "discrete"),
    # MountainCarContinuous: pumping with clipped and unclipped forces; the left wall.
    run("MountainCarContinuous-v0", [-0.5, 0.0], 999,
        lambda t, s: (1.5 if t % 5 == 0 else 0.8) * sign(s[1]), 500, "continuous"),
    run("MountainCarContinuous-v0", [-1.1, -0.06], 40, lambda t, s: -0.3, 100, "continuous"),
    # Acrobot: pumping with the velocity of the first link until termination; truncation.
    run("Acrobot-v1", [0.05, -0.05, 0.1, -0.1], 500, lambda t, s: 2 if s[3] >= 0 else 0, 600, "discrete"),
    run("Acrobot-v1", [0.05, -0.05, 0.1, -0.1], 500, lambda t, s: 0 if s[2] >= 0 else 2, 600, "discrete"),
    run("Acrobot-v1", [0.3, -0.2, 0.4, -0.5], 40, lambda t, s: [0, 1, 2, 2, 1][t % 5], 100, "discrete"),
]

json.dump({
    "generator": "gymnasium %s, numpy %s" % (gym.__version__, np.__version__),
    "cases": cases,
}, sys.stdout, indent=None, separators=(",", ":"))
sys.stdout.write("\n")
