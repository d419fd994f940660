"""Model files are read only when they are regular files under max_model_bytes (issue 35:
Policy("/dev/zero") never returned; a sparse 50 GB file killed the process)."""

from __future__ import annotations

import os
import time

import pytest

from onnxrl_sampler import Env, InvalidArgumentError, LimitError, ModelError, Policy

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL = os.path.join(REPO, "models", "cartpole_mlp.onnx")


def test_device_and_huge_files_refused_before_reading(lib, tmp_path):
    sparse = tmp_path / "sparse.onnx"
    with open(sparse, "wb") as f:
        f.truncate(50 << 30)
    start = time.monotonic()
    with pytest.raises(ModelError, match="not a regular file"):
        Policy("/dev/zero")
    with pytest.raises(ModelError, match="not a regular file"):
        Env("/dev/zero")
    with pytest.raises(LimitError, match=r"50 GiB, more than the limit of 1 GiB .*max_model_bytes"):
        Policy(str(sparse))
    assert time.monotonic() - start < 10


def test_max_model_bytes(lib):
    size = os.path.getsize(SMALL)
    with pytest.raises(LimitError, match="more than the limit of 100 bytes"):
        Policy(SMALL, max_model_bytes=100)
    with pytest.raises(LimitError):
        Env(SMALL, max_model_bytes=100)
    with pytest.raises(InvalidArgumentError, match="max_model_bytes"):
        Policy(SMALL, max_model_bytes=0)
    with Policy(SMALL, max_model_bytes=size) as p:
        assert p.obs_size == 4
