"""Fixtures of the Python tests: the source tree on sys.path, the `sample` binary, a `sample serve`
process, and the library (the tests that need it skip with the reason when it does not load).

Run from the repository root: `make python-test`, or `/usr/bin/python3 -m pytest python/tests`
after `make native build`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Iterator

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))

import onnxrl_sampler  # noqa: E402
from onnxrl_sampler import _lib  # noqa: E402

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
