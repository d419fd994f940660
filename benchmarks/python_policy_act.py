"""Policy.act from Python against the Go API it wraps, alternating rounds; reports per-call
times at batch 1 and 256, the time Python adds, and the throughput ratio python/go.

    /usr/bin/python3 benchmarks/python_policy_act.py [--calls 20000] [--rounds 5]

Each round times `calls` greedy calls of Policy.act on cartpole_mlp with log-probabilities and
values into out= arrays, the same calls of onnxrl_policy_act through ctypes with the pointers
computed once ("ctypes": what the ctypes call and the entry into Go from a Python thread cost,
without the package's checks), then runs capi's BenchmarkPolicyAct for the same batch and number of
calls (a compiled `go test` binary, built first with `go test -c`), which times the Go call
(policy.act) and the C call (onnxrl_policy_act from a C loop) in the same process; both sides
use the observations BenchmarkPolicyAct uses and one intra-op thread.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))

from onnxrl_sampler import Policy  # noqa: E402


def python_ns(p: Policy, n: int, calls: int) -> tuple[float, float]:
    """Wall and thread CPU time per call (the call runs on this thread: the Go code and ONNX
    Runtime with one intra-op thread too, so CPU time leaves out the time the thread waits for
    a core on a busy machine)."""
    obs = ((np.arange(4 * n) % 7 - 3) / 100).astype(np.float32).reshape(n, 4)
    out = (np.empty((n, 1), np.float32), np.empty(n, np.float32), np.empty(n, np.float32))
    act = p.act
    start, cpu = time.perf_counter_ns(), time.thread_time_ns()
    for _ in range(calls):
        act(obs, False, out, logp=True, values=True)
    return (time.perf_counter_ns() - start) / calls, (time.thread_time_ns() - cpu) / calls


def ctypes_ns(p: Policy, n: int, calls: int) -> tuple[float, float]:
    obs = ((np.arange(4 * n) % 7 - 3) / 100).astype(np.float32).reshape(n, 4)
    out = (np.empty((n, 1), np.float32), np.empty(n, np.float32), np.empty(n, np.float32))
    f, h = p._lib.onnxrl_policy_act, p._h
    po, pa, pl, pv = obs.ctypes.data, out[0].ctypes.data, out[1].ctypes.data, out[2].ctypes.data
    start, cpu = time.perf_counter_ns(), time.thread_time_ns()
    for _ in range(calls):
        if f(h, po, n, 0, pa, pl, pv):
            raise SystemExit("onnxrl_policy_act failed")
    return (time.perf_counter_ns() - start) / calls, (time.thread_time_ns() - cpu) / calls


def go_ns(binary: str, n: int, calls: int) -> tuple[float, float]:
    r = subprocess.run([binary, "-test.run", "^$", "-test.bench", f"BenchmarkPolicyAct/batch={n}$",
                        "-test.benchtime", f"{calls}x"], cwd=os.path.join(REPO, "capi"),
                       capture_output=True, text=True, check=True)
    m = re.search(r"([\d.]+) c-ns/call.*?([\d.]+) go-ns/call", r.stdout)
    if not m:
        raise SystemExit("no figures in the Go benchmark's output:\n" + r.stdout + r.stderr)
    return float(m.group(2)), float(m.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--go", default=os.environ.get("GO", "go"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        binary = os.path.join(d, "capi.test")
        subprocess.run([a.go, "test", "-c", "-o", binary, "./capi/"], cwd=REPO, check=True)
        with Policy("cartpole_mlp") as p:
            for n in (1, 256):
                calls = a.calls if n == 1 else max(a.calls // 20, 100)
                python_ns(p, n, 100)  # warm up
                py, raw, go, c, py_cpu, raw_cpu = [], [], [], [], [], []
                for _ in range(a.rounds):
                    w, cpu = python_ns(p, n, calls)
                    py.append(w)
                    py_cpu.append(cpu)
                    w, cpu = ctypes_ns(p, n, calls)
                    raw.append(w)
                    raw_cpu.append(cpu)
                    g, cc = go_ns(binary, n, calls)
                    go.append(g)
                    c.append(cc)
                for what, f in (("median", np.median), ("best", np.min)):
                    pm, rm, gm, cm = (float(f(x)) for x in (py, raw, go, c))
                    print(f"batch {n} ({what} of {a.rounds} rounds of {calls} calls): Policy.act {pm:.0f} ns/call, "
                          f"ctypes {rm:.0f}, go {gm:.0f}, c {cm:.0f}; Policy.act adds {pm - gm:.0f} ns/call to go "
                          f"({pm - rm:.0f} to ctypes), throughput Policy.act/go {gm / pm:.3f}")
                pc, rc = float(np.min(py_cpu)), float(np.min(raw_cpu))
                print(f"batch {n} (thread CPU time, best round): Policy.act {pc:.0f} ns/call, ctypes {rc:.0f}; "
                      f"the package's checks add {pc - rc:.0f} ns/call")


if __name__ == "__main__":
    main()
