"""Sampler against the Python user's best alternative: EnvPool's CartPole + onnxruntime's Python
InferenceSession + NumPy sampling and column storage, on the same policy (models/cartpole_mlp.onnx),
the same settings and the same columns. Alternating rounds in one process, env steps/s of each and
the ratio "Sampler / EnvPool+onnxruntime steps/s, above 1 = Sampler faster" (the goal of issue 34:
>= 1.5 at 256 and 4096 sub-environments).

    .venv-envpool/bin/python benchmarks/python_sampler_vs_envpool.py [--num-envs 256 4096]
        [--steps 2000000] [--rounds 5] [--explore both|on|off] [--fragment-length 200] [--envpool-threads 1]

The virtual environment needs envpool and onnxruntime from PyPI and NumPy (python3 -m venv
--system-site-packages .venv-envpool; .venv-envpool/bin/pip install envpool onnxruntime).

Both sides, per fragment of --fragment-length steps of all N sub-environments, with one thread
each (Sampler workers=1 threads=1 on the calling thread; EnvPool num_threads=1 unless
--envpool-threads, batch_size=N; onnxruntime intra_op_num_threads=1, CPUExecutionProvider) and
the same seed:

- run the policy on the N current observations, take the actions (explore on: sampled from the
  categorical distribution of the logits; off: the argmax) with their log-probability, step the
  N environments, autoreset ended episodes;
- keep the columns obs, new_obs, actions, rewards, terminateds, truncateds,
  action_dist_inputs (the logits), action_logp and vf_preds for the whole fragment, in memory
  that is reused by the next fragment (the Sampler's views are valid until the next sample();
  the alternative's preallocated (T, N) arrays likewise).

The alternative is written as a careful NumPy user would write it: the columns are preallocated
time-major arrays; obs has T + 1 rows so that new_obs is a view (obs[1:]); onnxruntime reads the
observations and writes logits and values straight into the columns through one IOBinding per
time step, made once (no per-step allocation or copy of the outputs); the sampling works in
place with out= buffers; there is no Python loop over sub-environments. What the Sampler keeps
beyond that (eps_id, env_id, agent_index, t; its rows ordered by sub-environment, as RLlib's)
is not asked of the alternative: that is work only the Sampler does.

Counting: the Sampler's figure is the rows of its batches (every row a transition). EnvPool
autoresets in the next step (the step after an episode's end resets that sub-environment and
ignores its action), so its rows after an end are not transitions: they are marked in a `valid`
column and not counted (about 1 row in 500 with this policy). Each contender samples three
fragments untimed after it is built (model load, first runs), then whole fragments until it
has at least --steps rows a round. Before timing, a check compares the third fragment of each:
columns, shapes and dtypes; action_logp on both sides (exploring: the log-softmax of the logits
at the action; greedy: 0, as RLlib's StochasticSampling records it, so neither side computes
it); the reward, episode-end, action and value statistics of the two (same policy, same
environment: close, not equal, as the two CartPoles seed differently).

Not part of `make test`. Needs libonnxrl_sampler.so (`make native`, or ONNXRL_SAMPLER_LIBRARY).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Callable

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))

from onnxrl_sampler import Sampler  # noqa: E402

MODEL = os.path.join(REPO, "models", "cartpole_mlp.onnx")
WARMUP = 3  # fragments sampled untimed before the rounds: model load, first runs, episode ends
COLUMNS = ("obs", "new_obs", "actions", "rewards", "terminateds", "truncateds", "action_dist_inputs",
           "action_logp", "vf_preds")


class EnvPoolOrt:
    """EnvPool's CartPole-v1 stepped with the policy through onnxruntime's Python session,
    sampling in NumPy, one fragment of (T, N) columns per call to :meth:`sample`."""

    def __init__(self, n: int, fragment: int, seed: int, explore: bool, envpool_threads: int = 1) -> None:
        import envpool
        import onnxruntime as ort

        self.n, self.t_len, self.explore = n, fragment, explore
        self.env = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=n, batch_size=n,
                                num_threads=envpool_threads, seed=seed)
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self.sess = ort.InferenceSession(MODEL, so, providers=["CPUExecutionProvider"])
        self.rng = np.random.default_rng(seed)
        self.k = k = int(self.env.action_space.n)
        obs_size = int(self.env.observation_space.shape[0])
        t = fragment
        # The columns, time-major, reused fragment after fragment.
        self.obs = np.empty((t + 1, n, obs_size), np.float32)  # obs[t + 1] is new_obs[t]
        self.actions = np.empty((t, n), np.int64)
        self.rewards = np.empty((t, n), np.float32)
        self.terminateds = np.empty((t, n), np.bool_)
        self.truncateds = np.empty((t, n), np.bool_)
        self.logits = np.empty((t, n, k), np.float32)
        self.action_logp = np.empty((t, n), np.float32)
        self.vf_preds = np.empty((t, n), np.float32)
        self.valid = np.empty((t, n), np.bool_)  # False: EnvPool's reset step after an episode's end
        # Scratch for the sampling, per step: (N,) columns, one per action where needed.
        self._max = np.empty(n, np.float32)
        self._z = np.empty((n, k), np.float32)
        self._p = np.empty((n, k), np.float32)
        self._sum = np.empty(n, np.float32)
        self._u = np.empty(n, np.float32)
        self._cdf = np.empty(n, np.float32)
        self._below = np.empty(n, np.bool_)
        self._rows = np.arange(n)
        self._ended = np.zeros(n, np.bool_)
        if not explore:
            self.action_logp.fill(0)  # greedy: RLlib (and the Sampler) record a log-probability of 0
        # One binding per time step, made once: input obs[t], outputs logits[t] and vf_preds[t].
        self._bindings = []
        for i in range(t):
            b = self.sess.io_binding()
            b.bind_input("obs", "cpu", 0, np.float32, [n, obs_size], self.obs[i].ctypes.data)
            b.bind_output("logits", "cpu", 0, np.float32, [n, k], self.logits[i].ctypes.data)
            b.bind_output("value", "cpu", 0, np.float32, [n], self.vf_preds[i].ctypes.data)
            self._bindings.append(b)
        obs, _ = self.env.reset()
        self.obs[t] = obs  # moved to row 0 by the first sample()

    def sample(self) -> int:
        """Fills the columns with the next fragment; returns its transitions (valid rows)."""
        run, step, rng, explore, k = self.sess.run_with_iobinding, self.env.step, self.rng, self.explore, self.k
        obs, actions, rewards, terms, truncs = self.obs, self.actions, self.rewards, self.terminateds, self.truncateds
        logits, logp, valid, ended = self.logits, self.action_logp, self.valid, self._ended
        mx, z, p, sm, u = self._max, self._z, self._p, self._sum, self._u
        cdf, below, rows = self._cdf, self._below, self._rows
        obs[0] = obs[self.t_len]
        for t in range(self.t_len):
            run(self._bindings[t])  # logits[t], vf_preds[t] from obs[t]
            lg, a = logits[t], actions[t]
            if explore:
                # Reductions over the few actions go column by column: NumPy's axis=1 reductions
                # cost 5-10 times more for two columns.
                np.copyto(mx, lg[:, 0])
                for j in range(1, k):
                    np.maximum(mx, lg[:, j], out=mx)
                np.subtract(lg, mx[:, None], out=z)  # log-softmax: z - log(sum(exp(z)))
                np.exp(z, out=p)
                np.copyto(sm, p[:, 0])
                for j in range(1, k):
                    np.add(sm, p[:, j], out=sm)
                # Inverse CDF: the action is the number of cumulative weights <= u * sum.
                rng.random(out=u, dtype=np.float32)
                np.multiply(u, sm, out=u)
                a.fill(0)
                np.copyto(cdf, p[:, 0])
                for j in range(1, k):
                    np.less_equal(cdf, u, out=below)
                    np.add(a, below, out=a)
                    if j + 1 < k:
                        np.add(cdf, p[:, j], out=cdf)
                np.log(sm, out=sm)
                np.subtract(z[rows, a], sm, out=logp[t])
            else:
                np.argmax(lg, axis=1, out=a)  # action_logp stays 0
            np.logical_not(ended, out=valid[t])
            o, r, te, tr, _ = step(a)
            obs[t + 1] = o
            rewards[t] = r
            terms[t] = te
            truncs[t] = tr
            np.logical_or(te, tr, out=ended)
        return int(np.count_nonzero(valid))

    def columns(self) -> dict[str, np.ndarray]:
        """The last fragment's columns (time-major views), as the Sampler names them."""
        return {"obs": self.obs[:-1], "new_obs": self.obs[1:], "actions": self.actions, "rewards": self.rewards,
                "terminateds": self.terminateds, "truncateds": self.truncateds, "action_dist_inputs": self.logits,
                "action_logp": self.action_logp, "vf_preds": self.vf_preds}

    def close(self) -> None:
        self.env.close()


def log_softmax_at(logits: np.ndarray, actions: np.ndarray) -> np.ndarray:
    lg = logits.astype(np.float64)
    lse = np.log(np.exp(lg - lg.max(-1, keepdims=True)).sum(-1)) + lg.max(-1)
    return np.take_along_axis(lg, actions[..., None], -1)[..., 0] - lse


def check(ours_batch: dict, alt: EnvPoolOrt) -> None:
    """Both sides keep the same columns from the same model, record the same log-probabilities
    and behave alike; raises SystemExit otherwise."""
    flat = {k: x.reshape(-1, *x.shape[2:]) for k, x in alt.columns().items()}
    valid = alt.valid.reshape(-1)
    sides = (("Sampler", ours_batch, np.ones(len(ours_batch["rewards"]), np.bool_)),
             ("EnvPool+onnxruntime", flat, valid))
    for name in COLUMNS:
        a, b = ours_batch[name], flat[name]
        if a.dtype != b.dtype or a.shape != b.shape:
            raise SystemExit(f"check: column {name}: Sampler {a.dtype}{a.shape}, alternative {b.dtype}{b.shape}")
    for side, c, m in sides:
        # The kept logits and values are the model's for the kept observations (onnxruntime's
        # Python session as the reference for both).
        logits, value = alt.sess.run(None, {"obs": np.ascontiguousarray(c["obs"][m])})
        err = max(float(np.max(np.abs(logits - c["action_dist_inputs"][m]))),
                  float(np.max(np.abs(value - c["vf_preds"][m]))))
        if err > 1e-3:
            raise SystemExit(f"check: {side}'s logits or values are off the model's by up to {err:.2g}")
        # Exploring: the log-softmax of the logits at the action; greedy: 0, as RLlib records it.
        want = (log_softmax_at(c["action_dist_inputs"][m], c["actions"][m]) if alt.explore
                else np.zeros(int(m.sum())))
        err = float(np.max(np.abs(want - c["action_logp"][m])))
        if err > 1e-4:
            raise SystemExit(f"check: {side}'s action_logp is off by up to {err:.2g}")
        if m.sum() < 0.99 * alt.n * alt.t_len:
            raise SystemExit(f"check: {side} has {m.sum()} transitions in a fragment of {alt.n * alt.t_len} rows")
        print(f"  check {side:20s} transitions {int(m.sum()):7d} of {len(m):7d} rows, "
              f"rewards {c['rewards'][m].sum():.0f}, "
              f"terminated {int(c['terminateds'][m].sum())}, truncated {int(c['truncateds'][m].sum())}, "
              f"action mean {c['actions'][m].mean():.3f}, action_logp mean {c['action_logp'][m].mean():.3f}, "
              f"vf_preds mean {c['vf_preds'][m].mean():.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--num-envs", type=int, nargs="+", default=[256, 4096])
    ap.add_argument("--fragment-length", type=int, default=200)
    ap.add_argument("--steps", type=int, default=2_000_000, help="at least this many env steps a run")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--explore", choices=("both", "on", "off"), default="both")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--envpool-threads", type=int, default=1,
                    help="EnvPool's num_threads (0: its default); the Sampler stays on one thread")
    a = ap.parse_args()
    import envpool
    import onnxruntime as ort

    with open(os.path.join(REPO, "third_party", "onnxruntime", "VERSION")) as f:
        ours_ort = f.read().strip()
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, envpool {envpool.__version__}, "
          f"onnxruntime {ort.__version__} (the Sampler's: {ours_ort}), {os.cpu_count()} CPUs, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"CartPole-v1, cartpole_mlp, fragment {a.fragment_length}, Sampler on one thread, EnvPool num_threads "
          f"{a.envpool_threads}, onnxruntime intra_op_num_threads 1, seed {a.seed}, "
          f"at least {a.steps} steps a run, {a.rounds} alternating rounds")
    modes = {"both": (True, False), "on": (True,), "off": (False,)}[a.explore]
    for explore in modes:
        for n in a.num_envs:
            s = Sampler(env="CartPole-v1", policy="cartpole_mlp", num_envs=n, workers=1, threads=1,
                        fragment_length=a.fragment_length, seed=a.seed, explore=explore)
            alt = EnvPoolOrt(n, a.fragment_length, a.seed, explore, a.envpool_threads)
            print(f"\nexplore={'on' if explore else 'off'}, num_envs={n}:")
            for _ in range(WARMUP):  # untimed; the last fragment of each is checked
                alt.sample()
                batch = s.sample()
            check(batch, alt)

            def run_sampler() -> int:
                done = 0
                while done < a.steps:
                    done += len(s.sample()["rewards"])
                return done

            def run_alt() -> int:
                done = 0
                while done < a.steps:
                    done += alt.sample()
                return done

            runs: dict[str, Callable[[], int]] = {"Sampler": run_sampler, "EnvPool+onnxruntime": run_alt}
            rates: dict[str, list[float]] = {k: [] for k in runs}
            for r in range(a.rounds):
                order = list(runs) if r % 2 == 0 else list(runs)[::-1]  # neither always meets a warmer machine
                for name in order:
                    t0 = time.perf_counter()
                    k = runs[name]()
                    rates[name].append(k / (time.perf_counter() - t0))
            for name, x in rates.items():
                print(f"  {name:20s} {statistics.median(x) / 1e6:6.2f}M steps/s "
                      f"({min(x) / 1e6:.2f}-{max(x) / 1e6:.2f})")
            ratios = [p / q for p, q in zip(rates["Sampler"], rates["EnvPool+onnxruntime"])]
            print(f"  Sampler / EnvPool+onnxruntime steps/s, above 1 = Sampler faster: median "
                  f"{statistics.median(ratios):.2f} (rounds: {', '.join(f'{x:.2f}' for x in ratios)})")
            s.close()
            alt.close()
    print(f"\nload average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
