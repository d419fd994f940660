"""Fixtures of the Python tests: the source tree on sys.path, the `sample` binary, a `sample serve`
process, and the library (the tests that need it skip with the reason when it does not load).

Run from the repository root: `make python-test`, or `/usr/bin/python3 -m pytest python/tests`
after `make native build`.

Installed mode (`make wheel-test`): with ONNXRL_TEST_INSTALLED=1 the source tree is not put on
sys.path and the package is the one the running Python has installed (a fresh virtual
environment with the wheel); the tests still read the checkout's reference data (models/,
testdata, examples/, bin/sample). Tests that can only check the source tree skip there with
the reason; test_installed.py checks that the package and its libraries are the venv's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Iterator

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: True in installed mode (see the module doc): the package is not the source tree's.
INSTALLED = os.environ.get("ONNXRL_TEST_INSTALLED", "") not in ("", "0")
if not INSTALLED:
    sys.path.insert(0, os.path.join(REPO, "python"))

import onnxrl_sampler  # noqa: E402
from onnxrl_sampler import _lib  # noqa: E402

#: The imported package's folder, and the folder that holds it (what a subprocess needs on
#: PYTHONPATH to import the same package): python/ of the checkout, or the venv's site-packages.
PACKAGE_DIR = os.path.dirname(os.path.abspath(onnxrl_sampler.__file__))
PACKAGE_PARENT = os.path.dirname(PACKAGE_DIR)

SAMPLE = os.path.join(REPO, "bin", "sample")


@pytest.fixture(scope="session")
def lib() -> object:
    """The loaded library; skips when it cannot be loaded (`make native` builds it)."""
    try:
        return _lib.lib()
    except onnxrl_sampler.LibraryNotFoundError as e:
        pytest.skip(f"libonnxrl_sampler.so does not load (run `make native`): {e}")


@pytest.fixture(scope="session")
def sample_bin() -> str:
    """The `sample` command; skips when it is not built (`make build`)."""
    if not os.access(SAMPLE, os.X_OK):
        pytest.skip(f"{SAMPLE} is not built (run `make build`)")
    return SAMPLE


class Server:
    """A running `sample serve` process and its URL."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen([SAMPLE, "serve", "--addr", "127.0.0.1:0", *args], cwd=REPO,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.log: list[str] = []
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                self.url = m.group(1)
                return
        raise RuntimeError("sample serve did not start: " + "".join(self.log))

    def stop(self) -> str:
        """Stops the server (SIGTERM: it ends open episodes and writes its output) and returns
        the rest of its log."""
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=30)
        if self.proc.returncode not in (0, -15):
            raise RuntimeError(f"sample serve exited with {self.proc.returncode}: {''.join(self.log)}{err}")
        return err


@pytest.fixture
def serve(sample_bin: str) -> Iterator:
    """Starts `sample serve` with the given arguments; stops every one started at the end."""
    started: list[Server] = []

    def start(*args: str) -> Server:
        s = Server(list(args))
        started.append(s)
        return s

    yield start
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()
