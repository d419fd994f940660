"""Rewards that float32 cannot hold (issue 35): Env.log_returns(1e300) was accepted and written
as Infinity, and so were sums of rewards; the HTTP server summed four 3e38 to Infinity. Every
entry point now refuses them with the same error."""

from __future__ import annotations

import json

import numpy as np
import pytest

from onnxrl_sampler import Env, InvalidArgumentError, PolicyClient, PolicyServerError

TOO_BIG = "does not fit the rewards column (float32: at most 3.4028235e+38 in magnitude)"


def test_env_refuses_rewards_beyond_float32(lib, tmp_path):
    out = tmp_path / "r.jsonl"
    obs = np.array([0.01, 0, 0, 0], np.float32)
    with Env("cartpole_mlp", out=str(out), max_episodes=2, explore=False) as env:
        eid = env.start_episode()
        env.get_action(eid, obs)
        for bad in (1e300, -1e39, float("inf"), float("nan")):
            with pytest.raises(InvalidArgumentError):
                env.log_returns(eid, bad)
        with pytest.raises(InvalidArgumentError, match=r"reward 1e\+300 " + TOO_BIG.replace("(", r"\(")
                           .replace(")", r"\)").replace("+", r"\+")):
            env.log_returns(eid, 1e300)
        env.log_returns(eid, 3e38)
        with pytest.raises(InvalidArgumentError, match=r"sum of rewards 6e\+38"):
            env.log_returns(eid, 3e38)
        with pytest.raises(InvalidArgumentError, match=r"rewards\[0\]"):
            env.log_returns_batch([eid], [1e300])
        env.end_episode(eid, obs)
    rewards = [r for line in out.read_text().splitlines() for r in json.loads(line)["rewards"]]
    assert rewards == [pytest.approx(3e38, rel=1e-6)]


def test_client_sum_refused_by_the_server(serve):
    s = serve("--model", "cartpole_mlp", "--explore=false", "--max-episodes", "1")
    try:
        c = PolicyClient(s.url)
        eid = c.start_episode()
        c.get_action(eid, [0.01, 0, 0, 0])
        c.log_returns(eid, 3e38)
        for _ in range(3):
            with pytest.raises(PolicyServerError) as e:
                c.log_returns(eid, 3e38)
            assert e.value.code == "bad_request"
            assert "sum of rewards 6e+38" in str(e.value) and TOO_BIG in str(e.value)
        c.end_episode(eid, [0.02, 0, 0, 0])
    finally:
        s.stop()
