"""Random bad input against Policy and Env: every call either works or raises one of the
documented exceptions; the interpreter never crashes and the handles keep working."""

from __future__ import annotations

import numpy as np

from onnxrl_sampler import Env, Policy, SamplerError

DTYPES = [np.float32, np.float64, np.int32, np.uint8, np.float16, np.complex64, object]
SPECIAL = [np.nan, np.inf, -np.inf, 3.4e38, -3.4e38, 1e-45, 0.0, 5.0]


def random_array(rng: np.random.Generator) -> object:
    kind = rng.integers(6)
    if kind == 0:
        return [0.0, 1.0, 2.0, 3.0]  # not an array
    shape = tuple(int(d) for d in rng.integers(0, 6, rng.integers(0, 4)))
    dtype = DTYPES[rng.integers(len(DTYPES))] if kind == 1 else np.float32
    a = np.zeros(shape, dtype=dtype)
    if dtype is np.float32 and a.size:
        a.flat[rng.integers(a.size)] = SPECIAL[rng.integers(len(SPECIAL))]
    if kind == 2 and a.ndim >= 2:
        a = a[:, ::2]  # a strided view
    if kind == 3:
        a = np.zeros((int(rng.integers(1, 4)), 4), np.float32)  # good shape, random values
        a[:] = rng.choice(SPECIAL, a.shape)
    return a


def test_random_input_to_policy(lib):
    rng = np.random.default_rng(7)
    good = np.zeros((2, 4), np.float32)
    with Policy("cartpole_mlp") as p:
        for _ in range(400):
            obs = random_array(rng)
            out = random_array(rng) if rng.random() < 0.3 else None
            try:
                p.act(obs, explore=bool(rng.integers(2)), out=out, logp=bool(rng.integers(2)),
                      values=bool(rng.integers(2)))
            except (ValueError, SamplerError):
                pass
        assert p.act(good).shape == (2,)  # Discrete(2): one int64 per row


def test_random_input_to_env(lib):
    rng = np.random.default_rng(8)
    with Env("cartpole_mlp", max_episodes=4, timeout_ms=2000) as env:
        ids = [env.start_episode() for _ in range(2)]
        for _ in range(300):
            obs = random_array(rng)
            eid = [ids[0], "unknown", "", "x" * 2000][int(rng.integers(4))]
            call = int(rng.integers(5))
            try:
                if call == 0:
                    env.get_action(eid, obs)
                elif call == 1:
                    env.get_actions([eid, ids[1]][: int(rng.integers(3))], obs)
                elif call == 2:
                    env.log_action(eid, obs, random_array(rng))
                elif call == 3:
                    env.log_returns(eid, float(rng.choice(SPECIAL)))
                else:
                    env.end_episode(eid, obs, truncated=bool(rng.integers(2)))
                    if eid == ids[0]:
                        ids[0] = env.start_episode()
            except (ValueError, SamplerError):
                pass
        a = env.get_action(ids[1], np.zeros(4, np.float32))
        assert a.shape == () and a.dtype == np.int64
