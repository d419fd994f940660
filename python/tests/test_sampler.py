"""Sampler: batches equal `sample run --out x.jsonl`'s for the same settings and seed, column by
column; the arrays are views on the library's batch; pyarrow (and polars) take a batch through
the Arrow C Data Interface without a copy; metrics, the iterator, errors and close."""

from __future__ import annotations

import itertools
import json
import os
import subprocess

import numpy as np
import pytest

import onnxrl_sampler
from onnxrl_sampler import Sampler

from conftest import REPO

# Settings as Sampler keywords and as `sample run` flags.
CASES = {
    "cartpole": (dict(env="CartPole-v1", num_envs=4, fragment_length=25, seed=7),
                 ["--env", "CartPole-v1", "--num-envs", "4", "--fragment-length", "25", "--seed", "7"], 6 * 100),
    "workers-gae": (dict(env="CartPole-v1", num_envs=4, workers=2, fragment_length=20, seed=3, gae=True),
                    ["--env", "CartPole-v1", "--num-envs", "4", "--workers", "2", "--fragment-length", "20",
                     "--seed", "3", "--gae"], 6 * 80),
    "pendulum-greedy": (dict(env="Pendulum-v1", num_envs=2, fragment_length=30, seed=1, explore=False),
                        ["--env", "Pendulum-v1", "--num-envs", "2", "--fragment-length", "30", "--seed", "1",
                         "--explore=false"], 4 * 60),
    "lstm": (dict(env="StatelessCartPole", num_envs=2, fragment_length=30, seed=2),
             ["--env", "StatelessCartPole", "--num-envs", "2", "--fragment-length", "30", "--seed", "2"], 3 * 60),
    "lstm-per-sequence": (dict(env="StatelessCartPole", num_envs=2, fragment_length=30, seed=2, max_seq_len=7,
                               state_in="per_sequence"),
                          ["--env", "StatelessCartPole", "--num-envs", "2", "--fragment-length", "30", "--seed", "2",
                           "--max-seq-len", "7", "--state-in", "per-sequence"], 3 * 60),
    "two-policies": (dict(env="MultiAgentCartPole", num_envs=2, fragment_length=40, seed=5,
                          policies={"trained": "cartpole_mlp", "rand": "random"},
                          policy_map={"agent_0": "trained", "agent_*": "rand"}),
                     ["--env", "MultiAgentCartPole", "--num-envs", "2", "--fragment-length", "40", "--seed", "5",
                      "--policy", "trained=cartpole_mlp", "--policy", "rand=random",
                      "--policy-map", "agent_0=trained", "--policy-map", "agent_*=rand"], 4 * 80),
}


def sample_run_batches(sample_bin: str, tmp_path, flags: list[str], steps: int) -> list[dict]:
    out = str(tmp_path / "x.jsonl")
    p = subprocess.run([sample_bin, "run", *flags, "--steps", str(steps), "--out", out, "--json"],
                       cwd=REPO, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout.strip().splitlines()[-1])
    batches = []
    for f in summary["out"]:
        with open(f) as fh:
            batches += [json.loads(line) for line in fh if line.strip()]
    return batches


def assert_same_columns(view: dict, want: dict, where: str) -> None:
    """Every column of the JSON batch (but the agent_id strings and the infos objects, which
    only the Arrow form has) equals the view's, value for value in the view's dtype."""
    names = set(want) - {"type", "agent_id", "infos"}
    assert set(view) == names, where
    for k in names:
        got = view[k]
        exp = np.asarray(want[k], dtype=got.dtype).reshape(got.shape)
        assert np.array_equal(got, exp), f"{where}: column {k} differs"


@pytest.mark.parametrize("case", list(CASES))
def test_batches_equal_sample_run(lib: object, sample_bin: str, tmp_path, case: str) -> None:
    kwargs, flags, steps = CASES[case]
    want = sample_run_batches(sample_bin, tmp_path, flags, steps)
    assert len(want) >= 3
    with Sampler(**kwargs) as s:
        for i, w in enumerate(want):
            got = s.sample()
            if "policies" in kwargs:
                assert w["type"] == "MultiAgentBatch" and set(got) == set(w["policy_batches"]), i
                for pid, pb in w["policy_batches"].items():
                    assert_same_columns(got[pid], pb, f"batch {i} policy {pid}")
            else:
                assert w["type"] == "SampleBatch"
                assert_same_columns(got, w, f"batch {i}")


def test_views(lib: object) -> None:
    with Sampler(env="CartPole-v1", num_envs=3, fragment_length=10, seed=0) as s:
        assert s.policies == ["default_policy"] and s.num_envs == 3
        assert s.observation_space.shape == (4,) and s.action_space.n == 2
        b = s.sample()
        assert b["obs"].shape == (30, 4) and b["obs"].dtype == np.float32
        assert b["actions"].shape == (30,) and b["actions"].dtype == np.int64
        assert b["terminateds"].dtype == np.bool_ and b["eps_id"].dtype == np.int64 and b["t"].dtype == np.int32
        assert s.last_env_steps == 30 and s.last_agent_steps == 30
        assert not b["obs"].flags.writeable and not b["obs"].flags.owndata
        with pytest.raises(ValueError):
            b["rewards"][0] = 1
        kept = {k: v.copy() for k, v in b.items()}
        t0 = b["t"]
        for _ in range(3):
            s.sample()
        # The view now shows a later batch; the copy kept its values.
        assert np.array_equal(kept["t"][:10], np.arange(10))
        assert not np.array_equal(t0, kept["t"])


def test_iterator_metrics_close(lib: object) -> None:
    s = Sampler(env="CartPole-v1", policy="random", num_envs=4, fragment_length=50, seed=1)
    rows = [b["rewards"].shape[0] for b in itertools.islice(s, 5)]
    assert rows == [200] * 5
    m = s.metrics()
    assert m["num_env_steps_sampled_lifetime"] == 1000 and m["batches"] == 5 and m["num_episodes"] > 0
    assert 5 < m["episode_return_mean"] < 100 and m["episode_len_mean"] == m["episode_return_mean"]
    assert set(m["perf"]) >= {"mean_env_wait_ms", "mean_inference_ms", "mean_raw_obs_processing_ms"}
    assert s.metrics()["num_episodes"] == 0 and s.metrics()["episode_return_mean"] is None
    s.close()
    s.close()
    assert s.closed
    with pytest.raises(onnxrl_sampler.StateError):
        s.sample()


def test_errors(lib: object) -> None:
    with pytest.raises(onnxrl_sampler.NotFoundError):
        Sampler(env="NoSuchEnv-v0")
    with pytest.raises(ValueError):
        Sampler(num_envs=0)
    with pytest.raises(ValueError, match="policy-map"):
        Sampler(env="MultiAgentCartPole", policies={"a": "random", "b": "random"})
    with pytest.raises(ValueError):
        Sampler(env_config={"no_such_key": 1})
    with pytest.raises(ValueError):
        Sampler(num_envs="4")  # type: ignore[arg-type]
    with Sampler(policy="random") as s:
        with pytest.raises(onnxrl_sampler.StateError):
            s.to_arrow()


def test_arrow_zero_copy(lib: object) -> None:
    pa = pytest.importorskip("pyarrow")
    with Sampler(env="CartPole-v1", num_envs=4, fragment_length=16, seed=2, gae=True) as s:
        for _ in range(2):
            b = s.sample()
            rb = s.to_arrow()
            assert isinstance(rb, pa.RecordBatch) and rb.num_rows == 64
            # The record's buffers are the views' memory: nothing was copied.
            for k in ("obs", "new_obs", "action_dist_inputs"):
                assert rb.column(k).values.buffers()[1].address == b[k].ctypes.data, k
            for k in ("rewards", "eps_id", "env_id", "t", "vf_preds", "advantages"):
                assert rb.column(k).buffers()[1].address == b[k].ctypes.data, k
            for k, v in b.items():
                col = rb.column(k)
                got = col.flatten().to_numpy(zero_copy_only=False) if v.ndim == 2 else col.to_numpy(zero_copy_only=False)
                assert np.array_equal(got.reshape(v.shape), v), k
            assert rb.column("module_id").to_pylist() == ["default_policy"] * 64
            assert rb.schema.field("actions").type == pa.int64()


def test_polars(lib: object) -> None:
    pytest.importorskip("pyarrow")
    pl = pytest.importorskip("polars")
    with Sampler(env="Pendulum-v1", num_envs=2, fragment_length=20, seed=3) as s:
        b = s.sample()
        df = pl.from_arrow(s.to_arrow(), rechunk=False)
        assert df.height == 40
        rewards = df["rewards"].to_numpy(allow_copy=False)
        assert rewards.ctypes.data == b["rewards"].ctypes.data  # polars took the buffer as it is
        assert np.array_equal(rewards, b["rewards"])
        assert np.array_equal(np.stack(df["obs"].to_list()).astype(np.float32), b["obs"])
