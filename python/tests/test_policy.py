"""Policy: its actions, log-probabilities and values against `sample infer`'s raw model outputs,
out= arrays, seeding, threads, and bad input."""

from __future__ import annotations

import json
import math
import os
import subprocess
import threading

import numpy as np
import pytest

from conftest import REPO
from onnxrl_sampler import InvalidArgumentError, ModelError, NotFoundError, Policy, StateError

# (model, observation shape, low, high) of the bundled stateless models.
MODELS = [
    ("cartpole_mlp", (4,), -0.4, 0.4),
    ("pendulum_gaussian", (3,), -1.0, 1.0),
    ("cnn_policy", (3, 32, 32), 0.0, 1.0),
]


def infer(sample_bin: str, model: str, obs: np.ndarray, tmp_path) -> dict[str, np.ndarray]:
    """The model's raw outputs for obs from `sample infer` (a separate process, the Go API)."""
    spec = json.load(open(os.path.join(REPO, "models", model + ".policy.json")))
    path = tmp_path / "in.json"
    path.write_text(json.dumps({"inputs": {spec["observation_input"]: {
        "shape": list(obs.shape), "data": [float(v) for v in obs.ravel()]}}}))
    res = subprocess.run([sample_bin, "infer", "--model", model, "--input", str(path)], cwd=REPO,
                         capture_output=True, text=True, check=True)
    outs = json.loads(res.stdout)["outputs"]
    return {k: np.asarray(v["data"], np.float64).reshape(v["shape"]) for k, v in outs.items()}, spec


def reference(outs: dict[str, np.ndarray], spec: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Greedy actions, their log-probabilities and the values, computed in NumPy from the raw outputs."""
    a = outs[spec["action_output"]]
    values = outs[spec["value_output"]]
    if spec["distribution"] == "categorical":
        logz = np.log(np.exp(a - a.max(1, keepdims=True)).sum(1)) + a.max(1)
        act = a.argmax(1)
        logp = a[np.arange(len(a)), act] - logz
        return act[:, None].astype(np.float32), logp, values
    assert spec["distribution"] == "diag_gaussian"
    k = a.shape[1] // 2
    mean, log_std = a[:, :k], a[:, k:]
    logp = (-log_std - 0.5 * math.log(2 * math.pi)).sum(1)  # the density at the mode
    box = spec["action_space"]
    lo, hi = np.asarray(box["low"], np.float64), np.asarray(box["high"], np.float64)
    act = lo + (np.clip(mean, -1, 1) + 1) * (hi - lo) / 2  # normalize_actions
    return act, logp, values


@pytest.mark.parametrize("model,shape,low,high", MODELS)
@pytest.mark.parametrize("batch", [1, 7, 256])
def test_act_equals_sample_infer(lib, sample_bin, tmp_path, model, shape, low, high, batch):
    rng = np.random.default_rng(batch)
    obs = rng.uniform(low, high, (batch, *shape)).astype(np.float32)
    outs, spec = infer(sample_bin, model, obs, tmp_path)
    want_act, want_logp, want_values = reference(outs, spec)
    with Policy(model) as p:
        act, logp, values = p.act(obs, logp=True, values=True)
    assert act.shape == (batch, *p.action_layout.shape) and logp.shape == (batch,) and values.shape == (batch,)
    assert act.dtype == (np.int64 if spec["distribution"] == "categorical" else np.float32)
    np.testing.assert_allclose(act.reshape(batch, -1), want_act, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(logp, want_logp, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(values, want_values, rtol=1e-5, atol=1e-5)


def test_out_arrays_are_written_in_place(lib):
    obs = np.linspace(-0.3, 0.3, 32, dtype=np.float32).reshape(8, 4)
    with Policy("cartpole_mlp") as p:
        want_a, want_lp, want_v = p.act(obs, logp=True, values=True)
        a = np.full(8, -7, np.int64)  # Discrete(2): int64, shape (n,)
        lp = np.full(8, -7, np.float32)
        v = np.full(8, -7, np.float32)
        got = p.act(obs, out=(a, lp, v), logp=True, values=True)
        assert got[0] is a and got[1] is lp and got[2] is v
        np.testing.assert_array_equal(a, want_a)
        np.testing.assert_array_equal(lp, want_lp)
        np.testing.assert_array_equal(v, want_v)
        only = np.full(8, -7, np.int64)
        assert p.act(obs, out=only) is only
        np.testing.assert_array_equal(only, want_a)
        # values alone: out holds (actions, values)
        a2, v2 = np.empty(8, np.int64), np.empty(8, np.float32)
        p.act(obs, out=(a2, v2), values=True)
        np.testing.assert_array_equal(v2, want_v)


def test_single_observation_and_image_shapes(lib):
    with Policy("cartpole_mlp") as p:
        one = np.array([0.01, 0.02, -0.03, 0.04], np.float32)
        a, lp, v = p.act(one, logp=True, values=True)
        assert a.shape == () and a.dtype == np.int64 and lp.shape == () and v.shape == ()
        assert p.action_layout.shape == () and p.action_size == 1
        batch = p.act(one[None])
        assert batch.shape == (1,) and batch[0] == a
        assert p.act(np.zeros((0, 4), np.float32)).shape == (0,)
        ro = np.frombuffer(one.tobytes() * 3, np.float32).reshape(3, 4)  # read-only memory
        assert not ro.flags.writeable
        np.testing.assert_array_equal(p.act(ro), np.repeat(batch, 3, 0))
    with Policy("cnn_policy") as p:
        obs = np.full((2, 3, 32, 32), 0.5, np.float32)
        assert p.act(obs).shape == (2,)
        assert p.act(obs.reshape(2, -1)).shape == (2,)  # flat rows are the same observations


def test_explore_is_seeded(lib):
    obs = np.zeros((256, 3), np.float32)
    with Policy("pendulum_gaussian", seed=3) as p1, Policy("pendulum_gaussian", seed=3) as p2, \
            Policy("pendulum_gaussian", seed=4) as p3:
        a1, a2, a3 = p1.act(obs, explore=True), p2.act(obs, explore=True), p3.act(obs, explore=True)
        greedy = p1.act(obs)
    np.testing.assert_array_equal(a1, a2)
    assert not np.array_equal(a1, a3)
    assert np.all(greedy == greedy[0])  # the same observation: the same mode
    assert np.std(a1) > 0.1  # sampled actions spread (log_std about -0.5)


def test_threads_share_a_policy(lib):
    rng = np.random.default_rng(0)
    obs = [rng.uniform(-0.4, 0.4, (64, 4)).astype(np.float32) for _ in range(8)]
    with Policy("cartpole_mlp", workers=2) as p:
        want = [p.act(o, values=True) for o in obs]
        errors: list[BaseException] = []

        def work(i: int) -> None:
            try:
                for _ in range(50):
                    a, v = p.act(obs[i], values=True)
                    np.testing.assert_array_equal(a, want[i][0])
                    np.testing.assert_array_equal(v, want[i][1])
            except BaseException as e:  # reported by the main thread
                errors.append(e)

        ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert not errors, errors[0]


@pytest.mark.parametrize("obs,match", [
    (np.zeros((2, 4), np.float64), "want dtype float32"),
    (np.zeros((2, 4), np.int32), "want dtype float32"),
    ([[0.0, 0.0, 0.0, 0.0]], "want a numpy.ndarray"),
    (np.zeros((2, 5), np.float32), r"4 values per row"),
    (np.zeros(3, np.float32), r"want \(4,\) or \(n, 4\)"),
    (np.zeros((4, 8), np.float32)[:, :4], "C-contiguous"),
    (np.float32(0), "want a numpy.ndarray"),
])
def test_bad_observations_raise_value_error(lib, obs, match):
    with Policy("cartpole_mlp") as p:
        with pytest.raises(ValueError, match=match):
            p.act(obs)


def test_observation_outside_the_space_writes_nothing(lib):
    obs = np.zeros((3, 4), np.float32)
    obs[2, 2] = 1.0  # pole angle beyond 0.419 rad
    out = np.full(3, -7, np.int64)
    with Policy("cartpole_mlp") as p:
        with pytest.raises(InvalidArgumentError, match="observation 2 .* outside the observation space") as e:
            p.act(obs, out=out)
        assert e.value.status == -1 and e.value.status_name == "ONNXRL_ERR_INVALID_ARGUMENT"
        np.testing.assert_array_equal(out, -7)
        obs[2, 2] = np.nan
        with pytest.raises(InvalidArgumentError):
            p.act(obs, out=out)


@pytest.mark.parametrize("out,match", [
    (np.zeros((2, 1), np.int64), r"shape \(2, 1\), want \(2,\)"),
    (np.zeros(2, np.float32), "int64"),
    (np.zeros(4, np.int64)[::2], "C-contiguous"),
    ((np.zeros(2, np.int64),), r"a tuple of 2 arrays"),
])
def test_bad_out_raises_value_error(lib, out, match):
    obs = np.zeros((2, 4), np.float32)
    with Policy("cartpole_mlp") as p:
        with pytest.raises(ValueError, match=match):
            p.act(obs, out=out, logp=isinstance(out, tuple))
        ro = np.zeros(2, np.int64)
        ro.flags.writeable = False
        with pytest.raises(ValueError, match="read-only"):
            p.act(obs, out=ro)


def test_open_errors(lib, tmp_path):
    with pytest.raises(NotFoundError, match="no_such_model"):
        Policy("no_such_model")
    with pytest.raises(ModelError, match="recurrent"):
        Policy("lstm_policy")
    with pytest.raises(InvalidArgumentError, match="device"):
        Policy("cartpole_mlp", device="tpu")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(ModelError):
        Policy(str(bad))


def test_closed_policy(lib):
    p = Policy("cartpole_mlp")
    p.close()
    p.close()  # twice: fine
    with pytest.raises(StateError, match="closed"):
        p.act(np.zeros((1, 4), np.float32))
    assert "closed" in repr(p)
