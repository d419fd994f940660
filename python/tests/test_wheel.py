"""The wheel (python/_build_backend/onnxrl_build.py; `make wheel`): pip builds it offline from the
source tree's native build, it holds exactly the expected files with a platform tag its libraries
justify, the same inputs give the same bytes, and installed with `pip install --no-index` into a
fresh virtual environment it works from an empty folder with no variable of ours set, loading
the library, the provider and ONNX Runtime from the installed package.

The wheel of 2026-11 (Go 1.26, g++ 12, ONNX Runtime 1.24.1): 25.4 MB, tag
py3-none-manylinux_2_34_x86_64 (`auditwheel show` agrees).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from conftest import INSTALLED, REPO

BUILD = os.path.join(REPO, os.environ.get("ONNXRL_BUILD_DIR", "build"))
NATIVE = [os.path.join(BUILD, "lib", "libonnxrl_sampler.so"), os.path.join(BUILD, "lib", "libonnxrl_ep.so"),
          os.path.join(REPO, "third_party", "onnxruntime", "lib", "libonnxruntime.so.1")]
LIBS = ["libonnxrl_ep.so", "libonnxrl_sampler.so", "libonnxruntime.so.1"]
# Our variables: none may be set where the installed wheel runs.
OURS = ("ONNXRL_SAMPLER_LIBRARY", "ONNXRUNTIME_SHARED_LIBRARY_PATH", "ONNXRL_EP_LIBRARY", "ONNXRL_BUILD_DIR",
        "LD_LIBRARY_PATH", "PYTHONPATH")


def _backend():
    spec = importlib.util.spec_from_file_location(
        "onnxrl_build", os.path.join(REPO, "python", "_build_backend", "onnxrl_build.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> str:
    """The wheel as `make wheel` builds it: pip's PEP 517 front end, build isolation, no index."""
    if INSTALLED:
        pytest.skip("builds a wheel from the source tree's native build and compares the install with the "
                    "source tree's package: the source-tree run's check (make python-test); here the imported "
                    "package is already the installed wheel")
    missing = [p for p in NATIVE if not os.path.isfile(p)]
    if missing:
        pytest.skip(f"the native build is missing ({', '.join(missing)}): run `make native` (or `make wheel`)")
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode:
        pytest.skip(f"{sys.executable} has no pip (Debian: python3-pip)")
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index", "-w", str(out),
                        "--config-settings", f"build-dir={BUILD}", os.path.join(REPO, "python")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    (name,) = os.listdir(out)
    return str(out / name)


def test_contents(wheel):
    name = os.path.basename(wheel)
    m = re.fullmatch(r"onnxrl_sampler-(\d+\.\d+\.\d+)-py3-none-((?:manylinux_2_\d+|linux)_x86_64)\.whl", name)
    assert m, name
    version, tag = m.groups()
    backend = _backend()
    assert tag == backend.platform_tag(NATIVE)  # stripping keeps the needs
    modules = sorted(n for n in os.listdir(os.path.join(REPO, "python", "onnxrl_sampler")) if n.endswith(".py"))
    info = f"onnxrl_sampler-{version}.dist-info"
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        assert sorted(names) == sorted([f"onnxrl_sampler/{n}" for n in modules + LIBS] +
                                       [f"{info}/{n}" for n in ("METADATA", "WHEEL", "LICENSE", "ONNXRUNTIME-LICENSE", "RECORD")])
        assert f"Tag: py3-none-{tag}" in z.read(f"{info}/WHEEL").decode()
        assert "Requires-Dist: numpy" in z.read(f"{info}/METADATA").decode()
        for row in z.read(f"{info}/RECORD").decode().split():
            arc, digest, size = row.rsplit(",", 2)
            if arc.endswith("RECORD"):
                continue
            data = z.read(arc)
            assert digest == "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert int(size) == len(data)
        for lib in LIBS:
            assert z.getinfo(f"onnxrl_sampler/{lib}").external_attr >> 16 == 0o100755
        # The pinned runtime as installed, byte for byte.
        with open(NATIVE[2], "rb") as f:
            assert z.read("onnxrl_sampler/libonnxruntime.so.1") == f.read()
    size = os.path.getsize(wheel)
    print(f"{name}: {size} bytes")
    assert 15e6 < size < 40e6, size  # 25.4 MB in 2026-11: a change here is worth a look


def test_reproducible(wheel, tmp_path):
    """Built again (the backend called directly), the wheel has the same bytes."""
    again = _backend().build_wheel(str(tmp_path), {"build-dir": BUILD})
    assert again == os.path.basename(wheel)
    with open(wheel, "rb") as a, open(tmp_path / again, "rb") as b:
        assert a.read() == b.read()


def test_missing_native_build_says_make_wheel(tmp_path):
    backend = _backend()
    with pytest.raises(backend.NativeLibrariesMissing, match=r"make wheel") as e:
        backend.build_wheel(str(tmp_path), {"build-dir": str(tmp_path / "nothing")})
    assert str(tmp_path / "nothing" / "lib" / "libonnxrl_sampler.so") in str(e.value)
    assert os.listdir(tmp_path) == []  # no wheel


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) is not installed")
def test_elf_needs_as_objdump_reads_them():
    for path in NATIVE:
        _, needed, versions = _backend().elf_needs(path)
        dump = subprocess.run(["objdump", "-T", "-p", path], capture_output=True, text=True, check=True).stdout
        want = set(re.findall(r"\b((?:GLIBC|GLIBCXX|CXXABI|GCC)_[0-9.]*[0-9])\b", dump))
        assert {v for v in versions if re.match(r"(GLIBC|GLIBCXX|CXXABI|GCC)_[0-9]", v)} == want, path
        assert needed == set(re.findall(r"NEEDED\s+(\S+)", dump)), path


SAMPLER_COLUMNS = ("obs", "actions", "rewards", "terminateds", "action_logp")
RUN_INSTALLED = r"""
import json, sys
SAMPLER_COLUMNS = %r
import numpy as np
import onnxrl_sampler as o

obs = np.array([[0.0, 0.0, 0.05, 0.0], [0.01, 0.5, -0.05, -0.5], [0.0, 0.0, 0.0, 0.0]], np.float32)
out = {"package": o.__file__}
for device in ("cpu", "native"):
    with o.Policy("cartpole_mlp", device=device) as p:
        out[device] = p.act(obs).tolist()
envs = o.make_vec("CartPole-v1", 4, seed=3)
first, _ = envs.reset()
obs2, rewards, terms, truncs, _ = envs.step(np.array([0, 1, 0, 1], np.int64))
envs.close()
out["vec"] = [first.tolist(), obs2.tolist(), rewards.tolist()]
if hasattr(o, "Sampler"):
    with o.Sampler("CartPole-v1", "cartpole_mlp", 4, seed=5, fragment_length=8) as s:
        batch = s.sample()
        out["sampler"] = {k: batch[k].tolist() for k in SAMPLER_COLUMNS}
out["maps"] = sorted({l.split()[-1] for l in open("/proc/self/maps") if "onnx" in l and ".so" in l})
json.dump(out, sys.stdout)
""" % (SAMPLER_COLUMNS,)


def test_installed_in_a_fresh_venv(wheel, tmp_path, lib):
    """`python3 -m venv --system-site-packages` + `pip install --no-index`, NumPy from the system,
    run from an empty folder with none of our variables: the same actions, trajectories and (where
    the Sampler has landed) sample batch as the source tree's build, every native library from the
    installed package."""
    import json

    venv = tmp_path / "venv"
    r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], capture_output=True,
                       text=True, timeout=300)
    if r.returncode:
        pytest.skip(f"{sys.executable} -m venv fails (Debian: python3-venv): {r.stderr.strip()}")
    py = str(venv / "bin" / "python")
    r = subprocess.run([py, "-m", "pip", "install", "-q", "--no-index", wheel], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    work = tmp_path / "empty"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in OURS}
    env["HOME"] = str(work)  # no user cache of the runtime either
    r = subprocess.run([py, "-c", RUN_INSTALLED], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    site = os.path.dirname(got["package"])
    assert site.startswith(str(venv)), site
    assert got["maps"] == [os.path.join(site, n) for n in sorted(LIBS)]

    # The source tree's build gives the same.
    import onnxrl_sampler as o

    obs = np.array([[0.0, 0.0, 0.05, 0.0], [0.01, 0.5, -0.05, -0.5], [0.0, 0.0, 0.0, 0.0]], np.float32)
    with o.Policy("cartpole_mlp") as p:
        want = p.act(obs).tolist()
    assert got["cpu"] == want and got["native"] == want
    envs = o.make_vec("CartPole-v1", 4, seed=3)
    first, _ = envs.reset()
    obs2, rewards, _, _, _ = envs.step(np.array([0, 1, 0, 1], np.int64))
    envs.close()
    assert got["vec"] == [first.tolist(), obs2.tolist(), rewards.tolist()]
    if hasattr(o, "Sampler"):
        with o.Sampler("CartPole-v1", "cartpole_mlp", 4, seed=5, fragment_length=8) as s:
            batch = s.sample()
            assert got["sampler"] == {k: batch[k].tolist() for k in SAMPLER_COLUMNS}
