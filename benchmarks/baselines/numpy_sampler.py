#!/usr/bin/env python3
"""A reference sampler in NumPy, for `sample bench --vs`.

CartPole-v1 vectorized over all sub-environments (gymnasium's dynamics: Euler steps of 0.02 s,
termination at |x| > 2.4 or |theta| > 12 degrees, truncation at 500 steps, resets uniform in
[-0.05, 0.05)), the policy evaluated with NumPy from the ONNX file's weights (onnx_numpy.py),
actions sampled from the categorical distribution (or argmax with --explore false), and every
transition stored into fragment arrays (obs, new_obs, actions, rewards, terminateds,
truncateds, action_logp, vf_preds, action_dist_inputs) the way a sampler builds its batches.

Protocol (docs/benchmarking.md): flags --env --model --num-envs --workers --device --seed
--explore --warmup --duration (seconds), --fragment-length; it steps for the warm-up, then
for the duration, and prints one JSON line last:
{"steps_per_sec": ..., "env_steps": ..., "seconds": ..., "episodes": ..., "episode_return_mean": ...}
or {"skipped": "why"} for settings it does not cover (other envs, several workers, GPUs).

Run it with a Python that has NumPy (Debian: apt-get install python3-numpy, then
/usr/bin/python3).
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_numpy  # noqa: E402

GRAVITY, MASS_CART, MASS_POLE, LENGTH, FORCE, TAU = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
TOTAL_MASS = MASS_CART + MASS_POLE
POLE_MASS_LENGTH = MASS_POLE * LENGTH
X_THRESHOLD, THETA_THRESHOLD = 2.4, 12 * 2 * np.pi / 360
MAX_STEPS = 500


class VecCartPole:
    """N CartPole-v1 sub-environments stepped together, resetting those that ended."""

    def __init__(self, n, rng):
        self.rng = rng
        self.state = rng.uniform(-0.05, 0.05, size=(n, 4))
        self.steps = np.zeros(n, dtype=np.int64)

    def obs(self):
        return self.state.astype(np.float32)

    def step(self, actions):
        """Steps every sub-environment; returns the observations after the step (before any
        reset), rewards, terminateds and truncateds, then resets the ones that ended."""
        x, x_dot, theta, theta_dot = self.state.T
        force = np.where(actions == 1, FORCE, -FORCE)
        cos, sin = np.cos(theta), np.sin(theta)
        temp = (force + POLE_MASS_LENGTH * theta_dot ** 2 * sin) / TOTAL_MASS
        theta_acc = (GRAVITY * sin - cos * temp) / (LENGTH * (4.0 / 3.0 - MASS_POLE * cos ** 2 / TOTAL_MASS))
        x_acc = temp - POLE_MASS_LENGTH * theta_acc * cos / TOTAL_MASS
        self.state = np.stack([x + TAU * x_dot, x_dot + TAU * x_acc, theta + TAU * theta_dot,
                               theta_dot + TAU * theta_acc], axis=1)
        self.steps += 1
        x, theta = self.state[:, 0], self.state[:, 2]
        terminated = (x < -X_THRESHOLD) | (x > X_THRESHOLD) | (theta < -THETA_THRESHOLD) | (theta > THETA_THRESHOLD)
        truncated = ~terminated & (self.steps >= MAX_STEPS)
        new_obs = self.obs()
        done = terminated | truncated
        k = int(done.sum())
        if k:
            self.state[done] = self.rng.uniform(-0.05, 0.05, size=(k, 4))
            self.steps[done] = 0
        return new_obs, np.ones(len(actions), dtype=np.float32), terminated, truncated


class Policy:
    """An MLP policy with a categorical head: logits and value from the ONNX graph."""

    def __init__(self, path, rng, explore):
        self.rng, self.explore = rng, explore
        self.random = path == "random"
        if not self.random:
            self.model = onnx_numpy.Model.load(path)
            self.obs_name = self.model.inputs[0]
            names = self.model.outputs
            self.logits_name = "logits" if "logits" in names else names[0]
            self.value_name = next((n for n in names if n in ("value", "vf", "values")), None)

    def act(self, obs):
        n = len(obs)
        if self.random:
            logits = np.zeros((n, 2), dtype=np.float32)
            values = np.zeros(n, dtype=np.float32)
        else:
            out = self.model.run({self.obs_name: obs})
            logits = out[self.logits_name]
            values = out[self.value_name].reshape(n) if self.value_name else np.zeros(n, dtype=np.float32)
        shifted = logits - logits.max(axis=1, keepdims=True)
        logp_all = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        if self.explore:
            cdf = np.cumsum(np.exp(logp_all), axis=1)
            u = self.rng.random((n, 1))
            actions = np.minimum((u > cdf).sum(axis=1), logits.shape[1] - 1)
        else:
            actions = logits.argmax(axis=1)
        return actions, logp_all[np.arange(n), actions], values, logits


class Fragments:
    """Per-step columns of one rollout fragment, emitted as flat sample batch rows."""

    def __init__(self, length, n, n_actions):
        self.length, self.t = length, 0
        self.cols = {
            "obs": np.zeros((length, n, 4), np.float32), "new_obs": np.zeros((length, n, 4), np.float32),
            "actions": np.zeros((length, n), np.int64), "rewards": np.zeros((length, n), np.float32),
            "terminateds": np.zeros((length, n), bool), "truncateds": np.zeros((length, n), bool),
            "action_logp": np.zeros((length, n), np.float32), "vf_preds": np.zeros((length, n), np.float32),
            "action_dist_inputs": np.zeros((length, n, n_actions), np.float32),
        }
        self.batches = 0

    def add(self, **values):
        for k, v in values.items():
            self.cols[k][self.t] = v
        self.t += 1
        if self.t == self.length:
            # One sample batch: rows grouped by sub-environment, as a sampler emits them.
            batch = {k: np.ascontiguousarray(np.swapaxes(v, 0, 1)).reshape((-1,) + v.shape[2:]) for k, v in self.cols.items()}
            self.batches += len(batch["obs"]) > 0
            self.t = 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", default="CartPole-v1")
    ap.add_argument("--model", default="random", help="an .onnx path (an MLP with a categorical head) or random")
    ap.add_argument("--num-envs", type=int, default=1)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--explore", default="true", choices=["true", "false"])
    ap.add_argument("--warmup", type=float, default=0.5, help="seconds")
    ap.add_argument("--duration", type=float, default=1.0, help="seconds")
    ap.add_argument("--fragment-length", type=int, default=200)
    a = ap.parse_args(argv)
    if a.num_envs < 1 or a.duration <= 0 or a.warmup < 0 or a.fragment_length < 1:
        ap.error("--num-envs and --fragment-length must be >= 1, --duration > 0, --warmup >= 0")

    def skip(why):
        print(json.dumps({"skipped": why}))
        return 0

    if a.env != "CartPole-v1":
        return skip("the NumPy sampler has CartPole-v1 only")
    if a.workers != 1:
        return skip("the NumPy sampler is single-threaded")
    if a.device != "cpu":
        return skip("the NumPy sampler runs on the CPU")
    rng = np.random.default_rng(a.seed)
    try:
        policy = Policy(a.model, rng, a.explore == "true")
    except NotImplementedError as e:
        return skip(str(e))
    env = VecCartPole(a.num_envs, rng)
    frags = Fragments(a.fragment_length, a.num_envs, 2)
    returns = np.zeros(a.num_envs)
    finished = []

    def run(seconds):
        steps = 0
        obs = env.obs()
        start = time.perf_counter()
        end = start + seconds
        while True:
            actions, logp, values, logits = policy.act(obs)
            new_obs, rewards, term, trunc = env.step(actions)
            frags.add(obs=obs, new_obs=new_obs, actions=actions, rewards=rewards, terminateds=term, truncateds=trunc,
                      action_logp=logp, vf_preds=values, action_dist_inputs=logits)
            returns[:] += rewards
            done = term | trunc
            if done.any():
                finished.extend(returns[done].tolist())
                returns[done] = 0
            obs = env.obs()
            steps += a.num_envs
            now = time.perf_counter()
            if now >= end:
                return steps, now - start

    run(a.warmup)
    finished.clear()
    steps, secs = run(a.duration)
    result = {"steps_per_sec": steps / secs, "env_steps": steps, "seconds": secs, "episodes": len(finished),
              "episode_return_mean": float(np.mean(finished)) if finished else None}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
