"""Env: the data it records against what the Go ExternalEnv behind `sample serve` records for the
same episodes, observations, actions and rewards; threads; bad input."""

from __future__ import annotations

import json
import threading
from typing import Any, Callable

import numpy as np
import pytest

from onnxrl_sampler import (Env, InvalidArgumentError, LimitError, NotFoundError, PolicyClient, StateError)

OBS_HIGH = np.array([2.0, 2.0, 0.4, 2.0], np.float32)


def observation(episode: int, t: int) -> np.ndarray:
    rng = np.random.default_rng(1000 * episode + t)
    return (rng.uniform(-1, 1, 4) * OBS_HIGH).astype(np.float32)


def run_script(start: Callable[[str], None], get_actions: Callable[[list[str], np.ndarray], list[Any]],
               log_action: Callable[[str, np.ndarray, int], None], log_returns: Callable[[str, float], None],
               end: Callable[[str, np.ndarray, bool], None]) -> list[list[Any]]:
    """One script of episodes, driven through either API; returns the actions it got.

    ep-0 and ep-1 ask for actions together (Env.get_actions), ep-2 logs its own actions, ep-3
    asks alone; ep-0 ends terminated after 5 steps, ep-1 truncated after 7, ep-2 after 6, and
    ep-3 is still running when the env closes (it ends truncated then).
    """
    ids = [f"ep-{i}" for i in range(4)]
    for i in ids:
        start(i)
    got: list[list[Any]] = []
    length = {"ep-0": 5, "ep-1": 7, "ep-2": 6, "ep-3": 9}
    for t in range(9):
        live = [i for i in ("ep-0", "ep-1") if t < length[i]]
        if live:
            obs = np.stack([observation(int(i[-1]), t) for i in live])
            got.append(get_actions(live, obs))
        if t < length["ep-2"]:
            log_action("ep-2", observation(2, t), t % 2)
        got.append(get_actions(["ep-3"], observation(3, t)[None]))
        for i in ids:
            if t < length[i]:
                log_returns(i, 0.5 + t + int(i[-1]))
        for i, term in (("ep-0", True), ("ep-1", False), ("ep-2", True)):
            if t == length[i] - 1:
                end(i, observation(int(i[-1]), t + 1), not term)
    return got


def rows(path: str) -> dict[tuple[int, int], dict[str, Any]]:
    """The transitions of a JSON lines output, keyed by (episode, t): episode is the rank of
    the row's eps_id among the file's episodes in order of first appearance, since the ids
    themselves are drawn per run where the episodes come from outside (two runs with the
    same seed number them differently)."""
    out: dict[tuple[int, int], dict[str, Any]] = {}
    rank: dict[int, int] = {}
    with open(path) as fh:
        for line in fh:
            b = json.loads(line)
            assert b["type"] == "SampleBatch"
            cols = [k for k, v in b.items() if isinstance(v, list) and len(v) == len(b["eps_id"])]
            for i in range(len(b["eps_id"])):
                r = {k: b[k][i] for k in cols}
                key = (rank.setdefault(r["eps_id"], len(rank)), r["t"])
                assert key not in out, f"transition {key} recorded twice"
                out[key] = r
    return out


def test_env_records_what_the_go_external_env_records(lib, serve, tmp_path):
    go_out, py_out = str(tmp_path / "go.jsonl"), str(tmp_path / "py.jsonl")

    srv = serve("--model", "cartpole_mlp", "--explore=false", "--out", go_out, "--seed", "5")
    client = PolicyClient(srv.url)
    go_actions = run_script(
        start=lambda i: client.start_episode(i),
        get_actions=lambda ids, obs: [client.get_action(i, o) for i, o in zip(ids, obs)],
        log_action=lambda i, o, a: client.log_action(i, o, a),
        log_returns=client.log_returns,
        end=lambda i, o, trunc: client.end_episode(i, o, truncated=trunc))
    client.close()
    srv.stop()

    with Env("cartpole_mlp", out=py_out, explore=False, seed=5) as env:
        py_actions = run_script(
            start=lambda i: env.start_episode(i),
            get_actions=lambda ids, obs: [int(a) for a in env.get_actions(ids, obs)],
            log_action=lambda i, o, a: env.log_action(i, o, np.array([a], np.float32)),
            log_returns=env.log_returns,
            end=lambda i, o, trunc: env.end_episode(i, o, truncated=trunc))

    assert py_actions == go_actions
    want, got = rows(go_out), rows(py_out)
    assert len(want) == 5 + 7 + 6 + 9
    assert got.keys() == want.keys()
    for key, w in want.items():
        g = got[key]
        assert g.keys() == w.keys(), key
        for col in w:
            if col in ("env_id", "eps_id"):
                continue  # the runner's slot of the episode, and the run's own episode ids
            if isinstance(w[col], (float, list)):
                np.testing.assert_allclose(np.asarray(g[col], np.float64), np.asarray(w[col], np.float64),
                                           rtol=1e-6, atol=1e-6, err_msg=f"{key} {col}")
            else:
                assert g[col] == w[col], (key, col)


def test_threads_run_their_own_episodes(lib, tmp_path):
    out = str(tmp_path / "threads.jsonl")
    steps, n_threads = 20, 6
    errors: list[BaseException] = []
    with Env("cartpole_mlp", out=out, explore=True, max_wait_us=200) as env:
        def work(k: int) -> None:
            try:
                eid = env.start_episode()
                act = np.empty((), np.int64)  # Discrete(2): an int64 of shape ()
                for t in range(steps):
                    a = env.get_action(eid, observation(k, t), out=act)
                    assert a is act and int(a) in (0, 1)
                    env.log_returns(eid, 1.0)
                env.end_episode(eid, observation(k, steps))
            except BaseException as e:
                errors.append(e)

        ts = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert not errors, errors[0]
    rs = rows(out)
    assert len(rs) == steps * n_threads
    assert len({eps for eps, _ in rs}) == n_threads
    assert sum(r["rewards"] for r in rs.values()) == steps * n_threads


def test_generated_ids_and_untrained_episodes(lib, tmp_path):
    out = str(tmp_path / "ids.jsonl")
    with Env("cartpole_mlp", out=out) as env:
        a, b = env.start_episode(), env.start_episode(training_enabled=False)
        assert len(a) == 36 and a != b
        for eid in (a, b):
            env.get_action(eid, observation(0, 0))
            env.end_episode(eid, observation(0, 1))
    assert len(rows(out)) == 1  # the untrained episode records nothing


def test_recurrent_policies_keep_state_per_episode(lib, tmp_path):
    """lstm_policy: the same observation gives the same outputs in two fresh episodes (state
    zero at the start) and different ones on an episode's second step (its state carried)."""
    out = str(tmp_path / "lstm.jsonl")
    obs = np.array([0.1, -0.05], np.float32)
    with Env("lstm_policy", out=out, explore=False) as env:
        a, b = env.start_episode("a"), env.start_episode("b")
        env.get_action(a, obs)
        env.get_action(a, obs)
        env.get_action(b, obs)
        for eid in (a, b):
            env.end_episode(eid, obs)
    eps: dict[int, dict[int, dict[str, Any]]] = {}
    for (e, t), r in rows(out).items():
        eps.setdefault(e, {})[t] = r
    ra, rb = sorted(eps.values(), key=len, reverse=True)
    assert sorted(ra) == [0, 1] and sorted(rb) == [0]
    for r in (ra[0], rb[0]):
        assert not np.any(r["state_in_0"]) and not np.any(r["state_in_1"])  # zero at the start
    np.testing.assert_array_equal(ra[1]["state_in_0"], ra[0]["state_out_0"])  # carried
    np.testing.assert_array_equal(ra[1]["state_in_1"], ra[0]["state_out_1"])
    np.testing.assert_allclose(ra[0]["action_dist_inputs"], rb[0]["action_dist_inputs"], rtol=1e-6)
    assert not np.allclose(ra[0]["action_dist_inputs"], ra[1]["action_dist_inputs"], rtol=1e-4)


def test_bad_input(lib):
    obs = observation(0, 0)
    with Env("cartpole_mlp", max_episodes=2) as env:
        with pytest.raises(NotFoundError, match="nope"):
            env.get_action("nope", obs)
        with pytest.raises(NotFoundError):
            env.log_returns("nope", 1.0)
        eid = env.start_episode("e1")
        with pytest.raises(StateError):
            env.start_episode("e1")
        env.start_episode("e2")
        with pytest.raises(LimitError):
            env.start_episode("e3")
        with pytest.raises(ValueError, match="float32"):
            env.get_action(eid, obs.astype(np.float64))
        with pytest.raises(ValueError, match="one row"):
            env.get_action(eid, np.zeros((2, 4), np.float32))
        with pytest.raises(InvalidArgumentError, match="not in the observation space"):
            env.get_action(eid, np.array([0, 0, 3, 0], np.float32))
        with pytest.raises(ValueError, match="3 rows for 2 episode ids"):
            env.get_actions(["e1", "e2"], np.zeros((3, 4), np.float32))
        with pytest.raises(ValueError, match="episode_id"):
            env.get_action(7, obs)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError):
            env.log_action(eid, obs, np.array([5], np.float32))  # not in Discrete(2)
        # get_actions stops at the first bad episode: the rows before it are written
        out = np.full(2, -7, np.int64)
        with pytest.raises(NotFoundError, match="episode 1 of 2"):
            env.get_actions(["e1", "nope"], np.stack([obs, obs]), out=out)
        assert out[0] in (0, 1) and out[1] == -7
        with pytest.raises(StateError, match="episode 1 of 2"):  # the same episode twice
            env.get_actions(["e1", "e1"], np.stack([obs, obs]))
        env.end_episode(eid, obs)
        with pytest.raises(StateError):
            env.get_action(eid, obs)
    with pytest.raises(StateError, match="closed"):
        env.get_action("e2", obs)
    env.close()  # twice: fine


def test_open_errors(lib, tmp_path):
    with pytest.raises(InvalidArgumentError, match="max_epsiodes"):
        Env("cartpole_mlp", max_epsiodes=3)  # a misspelt option never goes unnoticed
    with pytest.raises(InvalidArgumentError, match="max_episodes"):
        Env("cartpole_mlp", max_episodes=0)
    with pytest.raises(NotFoundError):
        Env("no_such_model")


def test_log_returns_batch(lib, tmp_path):
    """The rewards of one batch call land on each episode's own step; a bad reward logs none,
    an unknown id stops the call there."""
    out = str(tmp_path / "batch.jsonl")
    with Env("cartpole_mlp", out=out, explore=False) as env:
        ids = [env.start_episode("a"), env.start_episode("b")]
        obs = np.stack([observation(0, 0), observation(1, 0)])
        for t in range(3):
            env.get_actions(ids, obs)
            env.log_returns_batch(ids, [1.0 + t, 10.0 + t])
        with pytest.raises(InvalidArgumentError, match=r"rewards\[1\]"):
            env.log_returns_batch(ids, [1.0, float("nan")])
        with pytest.raises(ValueError, match="shape"):
            env.log_returns_batch(ids, [1.0])
        with pytest.raises(NotFoundError, match="episode 1 of 2"):
            env.log_returns_batch(["a", "nope"], np.array([100.0, 100.0]))
        for i, eid in enumerate(ids):
            env.end_episode(eid, obs[i])
    by_eps: dict[int, list[float]] = {}
    for (e, t), r in sorted(rows(out).items()):
        by_eps.setdefault(e, []).append(r["rewards"])
    assert sorted(by_eps.values()) == [[1.0, 2.0, 103.0], [10.0, 11.0, 12.0]]


def test_parquet_out(lib, tmp_path, sample_bin):
    """out="x.parquet" records the same transitions as JSON lines (read back through
    `sample convert`, so no pyarrow is needed)."""
    import subprocess
    paths = {ext: str(tmp_path / f"data.{ext}") for ext in ("jsonl", "parquet")}
    for path in paths.values():
        with Env("cartpole_mlp", out=path, explore=False, seed=3) as env:
            ids = [env.start_episode(f"e{k}") for k in range(3)]
            for t in range(4):
                env.get_actions(ids, np.stack([observation(k, t) for k in range(3)]))
                env.log_returns_batch(ids, [1.0, 2.0, 3.0])
            for k, eid in enumerate(ids):
                env.end_episode(eid, observation(k, 4))
    back = str(tmp_path / "back.jsonl")
    subprocess.run([sample_bin, "convert", paths["parquet"], back], check=True, capture_output=True)
    want, got = rows(paths["jsonl"]), rows(back)
    assert len(got) == 3 * 4
    assert got.keys() == want.keys()
    for key in want:
        for col in ("obs", "new_obs", "actions", "rewards", "terminateds", "truncateds"):
            assert got[key][col] == want[key][col], (key, col)
