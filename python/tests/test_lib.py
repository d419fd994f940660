"""Finding the library: where it looks and the error that lists it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import INSTALLED, PACKAGE_DIR, PACKAGE_PARENT, REPO
from onnxrl_sampler import LibraryNotFoundError, _lib


def test_candidates_in_order(monkeypatch):
    monkeypatch.delenv(_lib.ENV_LIBRARY, raising=False)
    where = [w for w, _ in _lib.candidate_paths()]
    assert where[0] == "the package's folder"
    assert where[1] == "the source tree's CMake build"
    assert any(w.startswith("the install prefix") for w in where)
    paths = [p for _, p in _lib.candidate_paths()]
    assert "/usr/local/lib/libonnxrl_sampler.so" in paths  # CMake's default install prefix
    assert where[-1] == "the system's library path"
    monkeypatch.setenv(_lib.ENV_LIBRARY, "/x/lib.so")
    assert _lib.candidate_paths() == [(f"${_lib.ENV_LIBRARY}", "/x/lib.so")]


def test_error_lists_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setenv(_lib.ENV_LIBRARY, str(tmp_path / "missing.so"))
    with pytest.raises(LibraryNotFoundError) as e:
        _lib._load()
    msg = str(e.value)
    assert str(tmp_path / "missing.so") in msg and "no such file" in msg and "make native" in msg
    bad = tmp_path / "bad.so"
    bad.write_bytes(b"not a library")
    monkeypatch.setenv(_lib.ENV_LIBRARY, str(bad))
    with pytest.raises(LibraryNotFoundError, match="bad.so"):
        _lib._load()


def _run(code: str, env: dict[str, str], cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.skipif(INSTALLED, reason="the source checkout's look-up of its own ONNX Runtime "
                    "(third_party/ above build/lib); the installed package carries the runtime beside the library")
def test_loads_from_anywhere(lib, tmp_path):
    """From another working directory, with the library named by the variable: the package finds
    the source tree's ONNX Runtime by itself."""
    env = {k: v for k, v in os.environ.items() if k != "ONNXRUNTIME_SHARED_LIBRARY_PATH"}
    env["ONNXRL_SAMPLER_LIBRARY"] = lib._name
    env["PYTHONPATH"] = os.path.join(REPO, "python")
    code = ("import numpy as np, onnxrl_sampler as o; p = o.Policy('cartpole_mlp'); "
            "print(p.act(np.zeros(4, np.float32)))")
    r = _run(code, env, str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() in ("0", "1")  # Discrete(2): an integer


def test_not_found_in_a_fresh_process(tmp_path):
    env = dict(os.environ, ONNXRL_SAMPLER_LIBRARY=str(tmp_path / "nope.so"), PYTHONPATH=PACKAGE_PARENT)
    r = _run("import onnxrl_sampler as o; o.Policy('cartpole_mlp')", env, str(tmp_path))
    assert r.returncode == 1
    assert "LibraryNotFoundError" in r.stderr and "nope.so" in r.stderr


def test_library_in_the_package_folder(lib, tmp_path):
    """A copy of the package with the library and ONNX Runtime inside it (what a wheel ships)
    works from anywhere, with nothing else pointing at them. The copy is of the imported package
    (installed mode: the venv's, its libraries left out and copied in as here)."""
    import shutil

    pkg = tmp_path / "site" / "onnxrl_sampler"
    shutil.copytree(PACKAGE_DIR, pkg, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.so.*"))
    shutil.copy(lib._name, pkg / "libonnxrl_sampler.so")
    rt = os.path.join(os.path.dirname(lib._name), "libonnxruntime.so.1")  # an installed package's
    if not os.path.exists(rt):
        rt = os.path.join(REPO, "third_party", "onnxruntime", "lib", "libonnxruntime.so.1")  # the checkout's
    shutil.copy(os.path.realpath(rt), pkg / "libonnxruntime.so.1")
    env = {k: v for k, v in os.environ.items() if k not in ("ONNXRUNTIME_SHARED_LIBRARY_PATH", "ONNXRL_SAMPLER_LIBRARY")}
    env["PYTHONPATH"] = str(tmp_path / "site")
    code = ("import numpy as np, onnxrl_sampler as o; p = o.Policy('cartpole_mlp'); "
            "print(o._lib.lib()._name); print(p.act(np.zeros(4, np.float32)))")
    r = _run(code, env, str(tmp_path))
    assert r.returncode == 0, r.stderr
    where, act = r.stdout.split()
    assert where == str(pkg / "libonnxrl_sampler.so") and act in ("0", "1")


def test_library_version(lib):
    """The library's version begins with the package's release (pyproject.toml)."""
    import re

    import onnxrl_sampler
    with open(os.path.join(REPO, "python", "pyproject.toml")) as f:
        release = re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)
    v = onnxrl_sampler.library_version()
    assert re.fullmatch(re.escape(release) + r"(\+[0-9a-f]{7}(\.dirty)?)?", v), v


def test_device_not_available(lib):
    """A device this machine cannot give is a DeviceError (status -9), still a ModelError; GPU 99
    exists nowhere."""
    import onnxrl_sampler as o
    for make in (lambda: o.Policy("cartpole_mlp", device="native:cuda:99"),
                 lambda: o.Env("cartpole_mlp", device="native:cuda:99")):
        with pytest.raises(o.DeviceError) as e:
            make()
        assert e.value.status == -9 and e.value.status_name == "ONNXRL_ERR_DEVICE"
        assert isinstance(e.value, o.ModelError)
    with pytest.raises(o.InvalidArgumentError):
        o.Env("cartpole_mlp", raise_gomaxprocs=1)
    with o.Env("cartpole_mlp", raise_gomaxprocs=False) as env:
        assert env.obs_size == 4
