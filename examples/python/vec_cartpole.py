"""A vectorized CartPole-v1 in NumPy: gymnasium's dynamics (Euler steps of 0.02 s, termination
beyond 12 degrees or 2.4 m, truncation at 500 steps), n environments stepped at once.

Used by env_get_actions.py (the sampler answers the actions) and by
benchmarks/python_env.py (against the same env with the policy evaluated in NumPy).
"""

from __future__ import annotations

import numpy as np

GRAVITY, MASS_CART, MASS_POLE, HALF_LENGTH, FORCE, TAU = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
TOTAL_MASS = MASS_CART + MASS_POLE
POLE_MASS_LENGTH = MASS_POLE * HALF_LENGTH
THETA_LIMIT = 12 * 2 * np.pi / 360
X_LIMIT = 2.4
MAX_STEPS = 500


class VecCartPole:
    """n CartPole-v1 environments; the state is one float32 array of shape (n, 4).

    ``step(actions)`` moves every environment one step and returns (rewards, terminated,
    truncated); environments that ended are *not* reset: the caller reads their final
    observation, then calls ``reset(mask)``.
    """

    def __init__(self, n: int, seed: int = 0) -> None:
        self.n = n
        self.rng = np.random.default_rng(seed)
        self.obs = np.empty((n, 4), np.float32)  # x, x_dot, theta, theta_dot
        self.steps = np.zeros(n, np.int64)
        self.reset(np.ones(n, bool))

    def reset(self, mask: np.ndarray) -> None:
        k = int(mask.sum())
        if k:
            self.obs[mask] = self.rng.uniform(-0.05, 0.05, (k, 4)).astype(np.float32)
            self.steps[mask] = 0

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = self.obs.astype(np.float64)
        x, x_dot, theta, theta_dot = s[:, 0], s[:, 1], s[:, 2], s[:, 3]
        force = np.where(actions.reshape(-1) > 0.5, FORCE, -FORCE)
        cos, sin = np.cos(theta), np.sin(theta)
        temp = (force + POLE_MASS_LENGTH * theta_dot ** 2 * sin) / TOTAL_MASS
        theta_acc = (GRAVITY * sin - cos * temp) / (HALF_LENGTH * (4.0 / 3.0 - MASS_POLE * cos ** 2 / TOTAL_MASS))
        x_acc = temp - POLE_MASS_LENGTH * theta_acc * cos / TOTAL_MASS
        x = x + TAU * x_dot
        x_dot = x_dot + TAU * x_acc
        theta = theta + TAU * theta_dot
        theta_dot = theta_dot + TAU * theta_acc
        self.obs[:] = np.stack([x, x_dot, theta, theta_dot], 1)
        self.steps += 1
        terminated = (np.abs(x) > X_LIMIT) | (np.abs(theta) > THETA_LIMIT)
        truncated = ~terminated & (self.steps >= MAX_STEPS)
        return np.ones(self.n, np.float32), terminated, truncated
