"""make_vec: the built-in environments vectorized, with gymnasium's VectorEnv API.

The trajectories in testdata/vec_env_trajectories.json were recorded from the Go environments
themselves (made from the registry and stepped one by one with next-step autoreset:
capi/vecenv_test.go, TestVecEnvTrajectories, -update-vec-golden); make_vec must reproduce them
bit for bit. The tests run with and without gymnasium: without it in the interpreter (Debian's
python3), the duck-typed class; with it (the project's .venv, `make python-venv`), the subclass,
gymnasium's own spaces and its env checker; test_without_gymnasium runs the duck-typed class in
a subprocess either way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import onnxrl_sampler
from onnxrl_sampler import InvalidArgumentError, StateError, make_vec

try:
    import gymnasium as gym
except ImportError:
    gym = None

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "testdata", "vec_env_trajectories.json")) as f:
    GOLDEN = json.load(f)


def _f32(bits: list[list[str]]) -> np.ndarray:
    return np.array([[int(b, 16) for b in row] for row in bits], np.uint32).view(np.float32)


def _f64(bits: list[list[str]]) -> np.ndarray:
    return np.array([[int(b, 16) for b in row] for row in bits], np.uint64).view(np.float64)


@pytest.mark.parametrize("case", GOLDEN, ids=[f"{c['env']}{c['config']}" for c in GOLDEN])
def test_trajectories_equal_go(lib: object, case: dict) -> None:
    cfg = json.loads(case["config"]) if case["config"] else {}
    n, tr = case["num_envs"], case["trajectory"]
    envs = make_vec(case["env"], n, seed=case["seed"], **cfg)
    obs_want = _f32(tr["obs_bits"]).reshape(len(tr["obs_bits"]), n, -1)
    actions = _f32(tr["action_bits"]).reshape(len(tr["action_bits"]), n, -1)
    rewards = _f64(tr["reward_bits"])
    obs, infos = envs.reset()
    assert infos == {}
    assert obs.dtype == np.float32 and obs.shape == envs.observation_space.shape
    np.testing.assert_array_equal(obs.view(np.uint32), obs_want[0].view(np.uint32))
    discrete = type(envs.single_action_space).__name__ == "Discrete"
    for k in range(len(actions)):
        a = actions[k, :, 0].astype(np.int64) if discrete else actions[k].astype(np.float32)
        if discrete:
            assert envs.action_space.contains(a)
        obs, rew, term, trunc, infos = envs.step(a)
        assert obs.view(np.uint32).tobytes() == obs_want[k + 1].view(np.uint32).tobytes(), f"step {k + 1}"
        assert rew.dtype == np.float64 and rew.view(np.uint64).tolist() == rewards[k].view(np.uint64).tolist()
        assert term.dtype == np.bool_ and term.tolist() == tr["terminated"][k]
        assert trunc.dtype == np.bool_ and trunc.tolist() == tr["truncated"][k]
        assert infos == {}
    envs.close()


def test_golden_covers_the_issue_envs() -> None:
    names = {c["env"] for c in GOLDEN}
    assert {"CartPole-v1", "Pendulum-v1", "MountainCar-v0"} <= names
    ended = sum(sum(t) for c in GOLDEN for t in c["trajectory"]["terminated"])
    cut = sum(sum(t) for c in GOLDEN for t in c["trajectory"]["truncated"])
    assert ended > 0 and cut > 0  # both ways of ending an episode, then autoreset


def test_autoreset_next_step(lib: object) -> None:
    envs = make_vec("CartPole-v1", 3, seed=4, max_episode_steps=2)
    obs0, _ = envs.reset()
    a = np.array([0, 1, 0])
    _, r, te, tr, _ = envs.step(a)
    assert r.tolist() == [1, 1, 1] and not tr.any()
    last, r, te, tr, _ = envs.step(a)
    assert tr.all() and not te.any() and r.tolist() == [1, 1, 1]
    first, r, te, tr, _ = envs.step(np.array([1, 1, 1]))  # actions ignored: a reset
    assert r.tolist() == [0, 0, 0] and not te.any() and not tr.any()
    assert np.all(np.abs(first) < 0.05) and not np.array_equal(first, last)
    # The new episode's start is the stream continued: a twin stepped with other actions agrees.
    twin = make_vec("CartPole-v1", 3, seed=4, max_episode_steps=2)
    twin.reset()
    twin.step(np.array([1, 1, 1]))
    twin.step(np.array([1, 0, 1]))
    tfirst, *_ = twin.step(np.array([0, 0, 0]))
    np.testing.assert_array_equal(first, tfirst)
    _, r, te, tr, _ = envs.step(a)
    assert r.tolist() == [1, 1, 1]
    # A terminal step: pushing one way topples the pole.
    envs = make_vec("CartPole-v1", 2, seed=1)
    envs.reset()
    for _ in range(200):
        obs, r, te, tr, _ = envs.step(np.array([1, 1]))
        if te[0]:
            break
    assert te[0] and abs(obs[0, 2]) > 0.2 and r[0] == 1
    obs, r, te, tr, _ = envs.step(np.array([1, 1]))
    assert r[0] == 0 and not te[0] and abs(obs[0, 2]) < 0.05


def _twins(name: str, n: int = 3, **cfg: object) -> tuple:
    a, b = make_vec(name, n, seed=9, **cfg), make_vec(name, n, seed=9, **cfg)
    a.reset()
    b.reset()
    return a, b


BAD_ACTIONS = [
    ("CartPole-v1", np.zeros(3, np.float32), "dtype"),            # floats for a Discrete space
    ("CartPole-v1", np.zeros(3, np.bool_), "dtype"),
    ("CartPole-v1", np.array(["a", "b", "c"]), "dtype"),
    ("CartPole-v1", np.zeros((3, 1), np.int64), "shape"),
    ("CartPole-v1", np.zeros(4, np.int64), "shape"),
    ("CartPole-v1", np.int64(0), "shape"),
    ("CartPole-v1", np.array([0, 2, 1]), "outside the action space"),
    ("CartPole-v1", np.array([0, 1, -1]), "outside the action space"),
    ("CartPole-v1", np.array([2**40, 0, 0]), "outside the action space"),
    ("MountainCar-v0", np.array([0, 1, 3], np.uint8), "outside the action space"),
    ("Pendulum-v1", np.zeros(3, np.float32), "shape"),
    ("Pendulum-v1", np.zeros((3, 2), np.float32), "shape"),
    ("Pendulum-v1", np.zeros((3, 1), np.bool_), "dtype"),
    ("Pendulum-v1", np.array([[0.0], [np.nan], [1.0]]), "outside the action space"),
]


@pytest.mark.parametrize("name,bad,why", BAD_ACTIONS, ids=[f"{n}-{w}-{i}" for i, (n, _, w) in enumerate(BAD_ACTIONS)])
def test_bad_actions_raise_and_leave_env_usable(lib: object, name: str, bad: np.ndarray, why: str) -> None:
    envs, twin = _twins(name)
    good = envs.action_space.sample()
    envs.step(good)
    twin.step(good)
    with pytest.raises(ValueError, match=why):
        envs.step(bad)
    for _ in range(5):
        a = envs.action_space.sample()
        got, want = envs.step(a), twin.step(a)
        for g, w in zip(got[:4], want[:4]):
            np.testing.assert_array_equal(g, w)


def test_out_of_range_is_the_librarys_invalid_argument(lib: object) -> None:
    envs = make_vec("CartPole-v1", 2)
    envs.reset()
    with pytest.raises(InvalidArgumentError) as e:
        envs.step(np.array([0, 5]))
    assert "actions[1]" in str(e.value)


def test_box_actions_any_float_or_int_dtype_clipped(lib: object) -> None:
    envs, twin = _twins("Pendulum-v1", 2)
    envs.step(np.array([[7.0], [-1]], np.float64))   # clipped to 2 by the environment
    twin.step(np.array([[2], [-1]], np.int32))
    a, b = envs.step(np.zeros((2, 1))), twin.step(np.zeros((2, 1), np.float32))
    np.testing.assert_array_equal(a[0], b[0])


def test_seeds_and_copies(lib: object) -> None:
    a, b = make_vec("CartPole-v1", 4, seed=10), make_vec("CartPole-v1", 4, seed=0)
    oa, _ = a.reset()
    ob, _ = b.reset(seed=10)
    np.testing.assert_array_equal(oa, ob)
    oc, _ = b.reset(seed=[13, 12, 11, 10])
    np.testing.assert_array_equal(oc, oa[::-1])
    od, _ = b.reset()  # the streams go on
    assert not np.array_equal(od, oc)
    for bad in (-1, 2**64, [1, 2], 1.5, [1, None, 2, 3]):
        with pytest.raises(ValueError):
            b.reset(seed=bad)
    with pytest.raises(ValueError):
        b.reset(options={"low": -0.1})
    b.reset(options={})
    o1 = b.step(np.zeros(4, np.int64))[0]
    o2 = b.step(np.zeros(4, np.int64))[0]
    assert not np.shares_memory(o1, o2) and not np.array_equal(o1, o2)
    c = make_vec("CartPole-v1", 4, copy=False)
    c.reset()
    r1 = c.step(np.zeros(4, np.int64))
    r2 = c.step(np.zeros(4, np.int64))
    assert all(x is y for x, y in zip(r1[:4], r2[:4]))  # the same arrays, overwritten


def test_open_errors_and_close(lib: object) -> None:
    with pytest.raises(LookupError, match="unknown environment"):
        make_vec("NoSuchEnv-v0", 2)
    with pytest.raises(ValueError, match="no_such_key"):
        make_vec("CartPole-v1", 2, no_such_key=1)
    with pytest.raises(ValueError, match="single-agent"):
        make_vec("MultiAgentCartPole", 2)
    for n in (0, -1, 1.5, True):
        with pytest.raises(ValueError):
            make_vec("CartPole-v1", n)
    envs = make_vec("CartPole-v1", 2)
    with pytest.raises(StateError, match="reset"):
        envs.step(np.zeros(2, np.int64))
    with envs:
        envs.reset()
    assert envs.closed
    envs.close()
    with pytest.raises(StateError):
        envs.step(np.zeros(2, np.int64))
    with pytest.raises(StateError):
        envs.reset()


def test_attributes(lib: object) -> None:
    envs = make_vec("MountainCar-v0", 5, seed=3)
    assert envs.num_envs == 5
    assert envs.single_observation_space.shape == (2,) and envs.observation_space.shape == (5, 2)
    assert envs.single_action_space.n == 3 and envs.action_space.shape == (5,)
    np.testing.assert_array_equal(envs.observation_space.low[4], envs.single_observation_space.low)
    assert envs.render_mode is None and envs.unwrapped is envs
    assert "next" in str(envs.metadata["autoreset_mode"]).lower().replace("_", "")
    obs, _ = envs.reset()
    assert envs.observation_space.contains(obs)
    assert "MountainCar-v0" in repr(envs)


@pytest.mark.skipif(gym is None, reason="gymnasium is not installed in this interpreter (make python-venv)")
@pytest.mark.parametrize("name", ["CartPole-v1", "Pendulum-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Acrobot-v1"])
def test_gymnasium_subclass_and_spaces(lib: object, name: str) -> None:
    envs = make_vec(name, 3)
    assert isinstance(envs, gym.vector.VectorEnv)
    assert envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    ref = gym.make(name)
    assert envs.single_observation_space == ref.observation_space
    assert envs.single_action_space == ref.action_space
    assert envs.observation_space == gym.vector.utils.batch_space(ref.observation_space, 3)
    assert envs.action_space == gym.vector.utils.batch_space(ref.action_space, 3)
    ref.close()
    ref_vec = gym.make_vec(name, num_envs=3, vectorization_mode="sync")
    assert envs.observation_space == ref_vec.observation_space and envs.action_space == ref_vec.action_space
    ref_vec.close()
    obs, infos = envs.reset(seed=1)
    assert envs.np_random is not None
    for _ in range(30):
        a = envs.action_space.sample()
        obs, r, te, tr, infos = envs.step(a)
        assert envs.observation_space.contains(obs)


@pytest.mark.skipif(gym is None, reason="gymnasium is not installed in this interpreter (make python-venv)")
def test_policy_actions_are_in_gymnasiums_spaces(lib: object) -> None:
    """Policy.act gives discrete actions as integers that gymnasium's spaces contain, and they
    step make_vec directly."""
    envs = make_vec("CartPole-v1", 8, seed=1)
    obs, _ = envs.reset()
    with onnxrl_sampler.Policy("cartpole_mlp") as p:
        a = p.act(obs)
        assert a.dtype == np.int64 and envs.action_space.contains(a)
        assert envs.single_action_space.contains(p.act(obs[0]))
        for _ in range(20):
            obs, *_ = envs.step(p.act(obs))
    with onnxrl_sampler.Policy("pendulum_gaussian") as p:
        envs = make_vec("Pendulum-v1", 4)
        obs, _ = envs.reset()
        a = p.act(obs)
        assert a.shape == envs.action_space.shape and envs.action_space.contains(a)
        envs.step(a)


@pytest.mark.skipif(gym is None, reason="gymnasium is not installed in this interpreter (make python-venv)")
def test_gymnasium_vector_wrappers(lib: object) -> None:
    """gymnasium's own vector wrappers take the env (they read metadata["autoreset_mode"])."""
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    envs = RecordEpisodeStatistics(make_vec("CartPole-v1", 4, seed=2, max_episode_steps=10))
    envs.reset()
    returns = []
    for _ in range(30):
        _, _, te, tr, infos = envs.step(np.ones(4, np.int64))
        if "episode" in infos:
            returns += list(infos["episode"]["r"][infos["_episode"]])
    assert returns and all(0 < r <= 10 for r in returns)


if gym is not None:
    class _OneEnv(gym.Env):
        """One sub-environment of make_vec as a gymnasium.Env, for gymnasium's env checker."""

        def __init__(self, name: str) -> None:
            self.v = make_vec(name, 1)
            self.observation_space = self.v.single_observation_space
            self.action_space = self.v.single_action_space
            self._discrete = isinstance(self.action_space, gym.spaces.Discrete)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            obs, _ = self.v.reset(seed=seed, options=options)
            return obs[0], {}

        def step(self, action):
            a = np.asarray([action], np.int64) if self._discrete else np.asarray(action)[None]
            obs, r, te, tr, _ = self.v.step(a)
            return obs[0], float(r[0]), bool(te[0]), bool(tr[0]), {}

        def close(self):
            self.v.close()


@pytest.mark.skipif(gym is None, reason="gymnasium is not installed in this interpreter (make python-venv)")
@pytest.mark.parametrize("name", ["CartPole-v1", "Pendulum-v1", "MountainCar-v0"])
def test_gymnasium_env_checker(lib: object, name: str) -> None:
    """gymnasium's check_env applies to single environments: one sub-environment through an
    adapter (reset determinism with seeds, step determinism, returned data not reused, spaces)."""
    import warnings

    from gymnasium.utils.env_checker import check_env

    def warned(env: object) -> set[str]:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            check_env(env, skip_render_check=True)
        return {str(x.message) for x in w}

    # The checker's advice about gymnasium's own environment (unbounded or asymmetric Box
    # spaces) is no finding; anything beyond it is.
    assert warned(_OneEnv(name)) <= warned(gym.make(name).unwrapped)


def test_without_gymnasium(lib: object) -> None:
    """The duck-typed class (gymnasium blocked from import) in a fresh interpreter."""
    code = r"""
import sys
sys.modules["gymnasium"] = None  # import gymnasium raises ImportError
import numpy as np
import onnxrl_sampler
from onnxrl_sampler import make_vec, spaces
e = make_vec("CartPole-v1", 3, seed=5)
assert type(e).__mro__[1] is object, type(e).__mro__
assert isinstance(e.single_action_space, spaces.Discrete) and isinstance(e.action_space, spaces.MultiDiscrete)
assert isinstance(e.observation_space, spaces.Box) and e.observation_space.shape == (3, 4)
obs, infos = e.reset(seed=1)
assert e.observation_space.contains(obs) and infos == {}
for _ in range(20):
    a = e.action_space.sample()
    assert e.action_space.contains(a) and a.shape == (3,) and a.dtype.kind == "i"
    obs, r, te, tr, infos = e.step(a)
try:
    e.step(np.zeros(3, np.float32))
    raise SystemExit("no ValueError")
except ValueError:
    pass
p = make_vec("Pendulum-v1", 2)
p.reset()
assert p.action_space.shape == (2, 1) and p.single_action_space.contains(np.zeros(1, np.float32))
p.step(p.action_space.sample())
print("ok", e.unwrapped is e, e.metadata["autoreset_mode"])
"""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(onnxrl_sampler.__file__)))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ok True next_step"), r.stdout
