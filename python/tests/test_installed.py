"""Installed mode (`make wheel-test`, ONNXRL_TEST_INSTALLED=1; see conftest.py): the package the
suite runs against is the wheel installed into a virtual environment, and everything native it
loads comes from that installed package, with none of our variables pointing elsewhere. Skipped
in the source-tree run.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import sys
import sysconfig

import numpy as np
import pytest

import onnxrl_sampler
from conftest import INSTALLED, PACKAGE_DIR, REPO
from test_wheel import LIBS, OURS

pytestmark = pytest.mark.skipif(not INSTALLED, reason="the source-tree run: `make wheel-test` runs these "
                                "(ONNXRL_TEST_INSTALLED=1, the wheel in a fresh venv)")


def test_package_is_the_venvs():
    assert sys.prefix != sys.base_prefix, "not a virtual environment"
    site = os.path.realpath(sysconfig.get_paths()["purelib"])
    assert os.path.realpath(sys.prefix) + os.sep in site + os.sep
    assert os.path.realpath(onnxrl_sampler.__file__) == os.path.join(site, "onnxrl_sampler", "__init__.py")
    assert not os.path.realpath(PACKAGE_DIR).startswith(os.path.join(REPO, "python") + os.sep)
    assert all(os.path.realpath(p) != os.path.join(REPO, "python") for p in sys.path if p)


def test_none_of_our_variables_is_set():
    assert [k for k in OURS if k in os.environ] == []


def test_installed_as_a_distribution():
    """pip's record of the install: the release of pyproject.toml, the libraries in its files."""
    dist = importlib.metadata.distribution("onnxrl-sampler")
    with open(os.path.join(REPO, "python", "pyproject.toml")) as f:
        assert dist.version == re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)
    files = {str(p) for p in dist.files}
    assert {f"onnxrl_sampler/{n}" for n in LIBS} <= files


def test_native_libraries_from_the_package(lib):
    """The library, ONNX Runtime and the execution provider (device "native") this process has
    loaded are the installed package's, and no other copy of them. (Debian's torch, loaded by the
    export tests, brings its own libonnx.so.1, which is ONNX, not ONNX Runtime: not counted.)"""
    assert lib._name == os.path.join(PACKAGE_DIR, "libonnxrl_sampler.so")
    with onnxrl_sampler.Policy("cartpole_mlp", device="native") as p:
        p.act(np.zeros((2, 4), np.float32))
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if ".so" in line}
    loaded = sorted(p for p in paths if os.path.basename(p).startswith(("libonnxrl", "libonnxruntime")))
    assert loaded == [os.path.join(os.path.realpath(PACKAGE_DIR), n) for n in sorted(LIBS)]
