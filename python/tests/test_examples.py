"""The examples in examples/python run and do what they say.

The examples put the source tree's python/ first on sys.path (a checkout's user runs them as they
are). In installed mode they run with the installed package imported first, so that their own
`import onnxrl_sampler` gets it; the wrapper checks at the end that it was still that one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np

from conftest import INSTALLED, PACKAGE_DIR, REPO

EXAMPLES = os.path.join(REPO, "examples", "python")


# Runs the script named by argv[1] as __main__ with argv[1:], the package imported beforehand.
WITH_PACKAGE_IMPORTED = """
import os, runpy, sys
import onnxrl_sampler
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
got = sys.modules["onnxrl_sampler"]
assert got is onnxrl_sampler and os.path.dirname(got.__file__) == %r, got.__file__
"""


def run(script: str, *args: str) -> str:
    cmd = [sys.executable, os.path.join(EXAMPLES, script), *args]
    if INSTALLED:
        cmd[1:1] = ["-c", WITH_PACKAGE_IMPORTED % PACKAGE_DIR]
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_env_get_actions(lib, tmp_path):
    out = str(tmp_path / "cartpole.jsonl")
    res = run("env_get_actions.py", "--num-envs", "8", "--steps", "60", "--out", out, "--explore")
    assert re.search(r"env_steps 480, steps_per_sec \S+, episodes \d+", res), res
    n = 0
    with open(out) as fh:
        for line in fh:
            b = json.loads(line)
            n += len(b["obs"])
            assert set(b["actions"]) <= {0, 1} and all(r == 1.0 for r in b["rewards"])
    assert n == 480  # every step recorded, the open episodes ended truncated


def test_vec_cartpole_dynamics():
    sys.path.insert(0, EXAMPLES)
    from vec_cartpole import MAX_STEPS, VecCartPole

    sim = VecCartPole(2)
    sim.obs[:] = [[0, 0, 0.2, 0], [0, 0, 0, 0]]
    _, term, trunc = sim.step(np.array([[1.0], [0.0]], np.float32))
    assert sim.obs[0, 1] > 0 and sim.obs[1, 1] < 0  # pushed right, pushed left
    assert not term.any() and not trunc.any()
    for _ in range(40):
        _, term, _ = sim.step(np.ones((2, 1), np.float32))
        if term[0]:
            break
    assert term[0]  # the tilted pole falls past 12 degrees
    sim.steps[1] = MAX_STEPS - 1
    sim.obs[1] = 0
    _, term, trunc = sim.step(np.zeros((2, 1), np.float32))
    assert trunc[1] and not term[1]


def test_policy_client_loop(serve):
    srv = serve("--model", "cartpole_mlp", "--explore=false")
    res = run("policy_client_loop.py", "--url", srv.url, "--episodes", "2")
    returns = [float(x) for x in re.findall(r"return (\S+)", res)]
    assert len(returns) == 2 and all(r >= 100 for r in returns), res  # the trained policy balances
    srv.stop()
