"""export_policy: MLP, Gaussian, LSTM and GRU policies exported, resolved by `sample inspect`
from the metadata alone, and run by the sampler with the module's outputs."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

from conftest import REPO
from onnxrl_sampler import ExportCheckError, Policy, export_policy
from onnxrl_sampler.export import _check, space_json

try:
    import torch
    from torch import nn
except Exception as e:  # ImportError, or a broken install
    pytest.skip(f"torch does not import ({e}); install Debian's python3-torch to run the export tests",
                allow_module_level=True)

BOX4 = {"type": "Box", "low": [-4.8, -10, -0.42, -10], "high": [4.8, 10, 0.42, 10], "shape": [4], "dtype": "float32"}
BOX2 = {"type": "Box", "low": -1.0, "high": 1.0, "shape": [2], "dtype": "float32"}


class MLP(nn.Module):
    def __init__(self, out: int = 2) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 32), nn.Tanh())
        self.pi = nn.Linear(32, out)
        self.vf = nn.Linear(32, 1)

    def forward(self, obs):
        x = self.body(obs)
        return self.pi(x), self.vf(x).squeeze(-1)


class ActionOnly(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pi = nn.Linear(4, 3)

    def forward(self, obs):
        return self.pi(obs)


class LSTM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.f = nn.Linear(2, 16)
        self.rnn = nn.LSTM(16, 16)
        self.pi = nn.Linear(16, 2)
        self.vf = nn.Linear(16, 1)

    def forward(self, obs, h, c):
        y, (h1, c1) = self.rnn(torch.tanh(self.f(obs)).unsqueeze(0), (h, c))
        y = y.squeeze(0)
        return self.pi(y), self.vf(y).squeeze(-1), h1, c1


class GRU(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.f = nn.Linear(2, 16)
        self.rnn = nn.GRU(16, 16, num_layers=2)
        self.mean = nn.Linear(16, 1)
        self.log_std = nn.Parameter(torch.full((1,), -0.5))
        self.vf = nn.Linear(16, 1)

    def forward(self, obs, h):
        y, h1 = self.rnn(torch.tanh(self.f(obs)).unsqueeze(0), h)
        y = y.squeeze(0)
        mean = self.mean(y)
        return torch.cat([mean, torch.zeros_like(mean) + self.log_std], -1), self.vf(y).squeeze(-1), h1


def inspect(sample_bin: str, path: str) -> dict:
    r = subprocess.run([sample_bin, "inspect", "--json", path], cwd=REPO, capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


@pytest.fixture(autouse=True)
def seeded():
    torch.manual_seed(0)


def test_mlp(lib, sample_bin, tmp_path):
    path = str(tmp_path / "mlp.onnx")
    m = MLP()
    spec = export_policy(m, BOX4, {"type": "Discrete", "n": 2}, path)
    info = inspect(sample_bin, path)
    assert info["policy_spec_source"] == "metadata onnxrl.policy"
    assert [i["name"] for i in info["inputs"]] == ["obs"]
    assert [o["name"] for o in info["outputs"]] == ["logits", "value"]
    assert all(t["dynamic_axes"] == [0] and t["dim_names"][0] == "batch" for t in info["inputs"] + info["outputs"])
    got = info["policy_spec"]
    for k in ("observation_input", "action_output", "value_output", "distribution"):
        assert got[k] == spec[k]
    # The sampler's greedy actions, log-probs and values are the module's.
    obs = np.random.default_rng(0).uniform(-0.4, 0.4, (50, 4)).astype(np.float32)
    with torch.no_grad():
        logits, value = m(torch.from_numpy(obs))
    with Policy(path) as p:
        a, lp, v = p.act(obs, logp=True, values=True)
    np.testing.assert_array_equal(a, logits.argmax(1).numpy())
    np.testing.assert_allclose(lp, torch.log_softmax(logits, 1).max(1).values.numpy(), atol=1e-5)
    np.testing.assert_allclose(v, value.numpy(), atol=1e-5)


def test_action_only_and_gymnasium_style_spaces(lib, tmp_path):
    class Discrete:
        n, start = 3, 0

    class Box:
        low, high, shape = np.full(4, -np.inf, np.float32), np.full(4, np.inf, np.float32), (4,)

    path = str(tmp_path / "act.onnx")
    spec = export_policy(ActionOnly(), Box(), Discrete(), path)
    assert "value_output" not in spec and spec["action_space"] == {"type": "Discrete", "n": 3}
    assert spec["observation_space"]["low"][0] == -3.4028235e38  # -inf: the float32 extreme
    with Policy(path) as p:
        with pytest.raises(ValueError, match="value"):
            p.act(np.zeros((1, 4), np.float32), values=True)
        assert p.act(np.zeros((2, 4), np.float32)).shape == (2,)


@pytest.mark.parametrize("module,state_shapes,action_space", [
    (LSTM, [(1, None, 16), (1, None, 16)], {"type": "Discrete", "n": 2}),
    (GRU, [(2, None, 16)], {"type": "Box", "low": -2.0, "high": 2.0, "shape": [1], "dtype": "float32"}),
])
def test_recurrent(lib, sample_bin, tmp_path, module, state_shapes, action_space):
    path = str(tmp_path / "rnn.onnx")
    m = module()
    spec = export_policy(m, BOX2, action_space, path, state_shapes=state_shapes, check_steps=6)
    assert [s["input"] for s in spec["state"]] == [f"state_in_{i}" for i in range(len(state_shapes))]
    info = inspect(sample_bin, path)
    assert info["policy_spec_source"] == "metadata onnxrl.policy"
    assert len(info["policy_spec"]["state"]) == len(state_shapes)
    for t in info["inputs"][1:] + info["outputs"][-len(state_shapes):]:
        assert t["dynamic_axes"] == [1], t
    # export_policy's check has run the model through an Env for 6 steps, comparing every
    # step's outputs with the module's with the states carried (test_check_catches_a_different_module
    # shows that it fails when they differ).


def test_check_catches_a_different_module(lib, tmp_path):
    path = str(tmp_path / "mlp.onnx")
    spec = export_policy(MLP(), BOX4, {"type": "Discrete", "n": 2}, path)
    rng = np.random.default_rng(0)

    def gen_obs(batch):
        return rng.uniform(-0.4, 0.4, (batch, 4)).astype(np.float32)

    with pytest.raises(ExportCheckError, match="ONNX Runtime gives"):
        _check(MLP(), path, spec, gen_obs, lambda b, z: [], True, 2, 2, 1e-4, 1e-4)


def test_bad_arguments(tmp_path):
    path = str(tmp_path / "x.onnx")
    with pytest.raises(ValueError, match="Box"):
        export_policy(MLP(), {"type": "Discrete", "n": 4}, {"type": "Discrete", "n": 2}, path)
    with pytest.raises(ValueError, match="distribution"):
        export_policy(MLP(), BOX4, {"type": "Discrete", "n": 2}, path, distribution="beta")
    with pytest.raises(ValueError, match="exactly one None"):
        export_policy(LSTM(), BOX2, {"type": "Discrete", "n": 2}, path, state_shapes=[(1, 1, 16)] * 2)
    with pytest.raises(ValueError, match="returns 4 tensors for 0 states"):
        export_policy(_Returns4(), BOX4, {"type": "Discrete", "n": 2}, path)
    with pytest.raises(ValueError, match="want a dict"):
        space_json(42)
    assert not os.path.exists(path)


class _Returns4(nn.Module):
    def forward(self, obs):
        return obs, obs.sum(1), obs, obs
