"""Sampler: ``sample run`` from Python (onnxrl_sampler_* of the C API).

The library steps the built-in environments with the policy, builds RLlib's sample batches, and
hands each batch over without a copy: :meth:`Sampler.sample` returns NumPy arrays that are views
on the batch's own memory, :meth:`Sampler.to_arrow` a ``pyarrow.RecordBatch`` over the same memory
(the Arrow C Data Interface).

Zero-copy rules: a batch's arrays (and its Arrow record) are valid until the next
:meth:`Sampler.sample` or :meth:`Sampler.close`; after that the library reuses their memory for
later batches. Keep a batch with ``{k: v.copy() for k, v in batch.items()}`` (or
``record.to_pandas()``, writing it to Parquet, ...). The arrays are read-only.
"""

from __future__ import annotations

import ctypes
import json
import threading
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

import numpy as np

from . import _lib
from . import spaces as _spaces
from .errors import StateError

__all__ = ["Sampler"]

#: The NumPy dtypes of ONNXRL_DTYPE_*.
_DTYPES = {1: np.dtype(np.float32), 2: np.dtype(np.int32), 3: np.dtype(np.int64), 4: np.dtype(np.bool_)}

# sizeof(struct ArrowArray) and sizeof(struct ArrowSchema) of the Arrow C Data Interface.
_ARROW_ARRAY_SIZE, _ARROW_SCHEMA_SIZE = 80, 72


class _Column(ctypes.Structure):
    """onnxrl_column of include/onnxrl/sampler.h."""

    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("dtype", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("shape", ctypes.c_int64 * 2)]


def _declare(lib: ctypes.CDLL) -> None:
    """Sets the prototypes of onnxrl_sampler_* (once per process)."""
    if getattr(lib, "_onnxrl_sampler_declared", False):
        return
    i, p, i64, c = ctypes.c_int, ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p
    protos = {
        "onnxrl_sampler_open": (i, [c, p]),
        "onnxrl_sampler_info": (i, [p, p, p]),
        "onnxrl_sampler_sample": (i, [p, p, p]),
        "onnxrl_sampler_columns": (i, [p, i64, p, p, p]),
        "onnxrl_sampler_export_arrow": (i, [p, p, p]),
        "onnxrl_sampler_metrics": (i, [p, p, p]),
        "onnxrl_sampler_close": (i, [p]),
    }
    for name, (res, args) in protos.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    lib._onnxrl_sampler_declared = True


Batch = dict  # dict[str, np.ndarray], or dict[str, dict[str, np.ndarray]] with several policies


class Sampler:
    """The sampler: ``num_envs`` sub-environments of a built-in environment stepped with an
    ONNX policy inside the library, as ``sample run`` steps them, one sample batch per call.

    Args:
        env: a registered environment (``"CartPole-v1"``, ``"MultiAgentCartPole"``, ...;
            ``sample run --list-envs`` lists them).
        policy: an ``.onnx`` path, a bundled model name (``"cartpole_mlp"``) or ``"random"``;
            None: the environment's bundled policy.
        num_envs: sub-environments in all (split over the workers).
        policies: instead of ``policy``, several policies by id (``{"trained": "x.onnx",
            "rand": "random"}``), with ``policy_map``: agent globs to policy ids, the first
            match wins (a dict in order, or a list of pairs: ``{"agent_0": "trained",
            "agent_*": "rand"}``).
        env_config: the environment's config keys (``{"max_episode_steps": 200}``).
        seed: sub-environment i is seeded with seed + i; the same settings and seed give
            the batches ``sample run --seed`` writes.
        workers: runners working in parallel, each on a thread of its own with its share of
            the sub-environments; 1 (the default) steps on the calling thread.
        fragment_length, batch_mode, count_steps_by, gae, gamma, lambda_, explore,
            normalize_actions, clip_actions, device, threads, remote, remote_wait_ms,
            restart_failed, max_model_bytes, max_seq_len: as ``sample run``'s flags of those
            names.
        state_in: ``"per_row"`` (the default: ``state_in_K`` has a row per row) or
            ``"per_sequence"`` (RLlib's layout: a row per ``seq_lens`` entry; :meth:`to_arrow`
            then refuses, as Arrow records hold a row per transition).

    Batches (:meth:`sample`): a dict of NumPy arrays with RLlib's column names, the columns of
    ``sample run --out x.jsonl``: ``obs``, ``new_obs`` (float32, ``(rows, obs_size)``),
    ``actions`` (int64 ``(rows,)`` for a Discrete space, int64 rows for MultiDiscrete and
    MultiBinary, float32 rows otherwise), ``rewards`` (float32), ``terminateds``,
    ``truncateds`` (bool), ``eps_id`` (int64), ``env_id``, ``agent_index``, ``t`` (int32),
    and when there are ``action_dist_inputs``, ``action_logp``, ``vf_preds``,
    ``state_in_K`` (a row per row, or per sequence with ``state_in="per_sequence"``),
    ``state_out_K``, ``seq_lens`` (one per sequence), ``advantages``, ``value_targets``;
    the ``agent_id`` strings and the ``infos`` (RLlib's per-row infos, JSON objects) are in
    the Arrow form (:meth:`to_arrow`). With ``policies``, a dict of such dicts by policy id (the policies
    with rows in this batch), as RLlib's MultiAgentBatch. The arrays are read-only views on
    the library's batch, valid until the next :meth:`sample`: ``.copy()`` what you keep.

    Example::

        with onnxrl_sampler.Sampler(env="CartPole-v1", num_envs=8, seed=0) as s:
            batch = s.sample()              # 8 * 200 rows
            obs = batch["obs"]              # float32 (1600, 4), a view
            kept = batch["rewards"].copy()  # survives the next sample()
            print(s.metrics()["episode_return_mean"])
    """

    def __init__(self, env: str = "CartPole-v1", policy: Optional[str] = None, num_envs: int = 1, *,
                 policies: Optional[Mapping[str, str]] = None,
                 policy_map: Union[Mapping[str, str], Sequence[Sequence[str]], None] = None,
                 env_config: Optional[Mapping[str, Any]] = None, seed: int = 0, workers: int = 1,
                 fragment_length: int = 200, batch_mode: str = "truncate_episodes",
                 count_steps_by: str = "env_steps", gae: bool = False, gamma: float = 0.99,
                 lambda_: float = 0.95, explore: bool = True, normalize_actions: bool = True,
                 clip_actions: bool = False, device: str = "cpu", threads: int = 1, remote: bool = False,
                 remote_wait_ms: int = 0, restart_failed: bool = False,
                 max_model_bytes: Optional[int] = None, max_seq_len: int = 20,
                 state_in: str = "per_row") -> None:
        self._h: Optional[int] = None
        self._close_lock = threading.Lock()
        opts: dict[str, Any] = {
            "env": env, "num_envs": num_envs, "workers": workers, "seed": seed,
            "fragment_length": fragment_length, "batch_mode": batch_mode, "count_steps_by": count_steps_by,
            "gae": gae, "gamma": gamma, "lambda": lambda_, "explore": explore,
            "normalize_actions": normalize_actions, "clip_actions": clip_actions, "device": device,
            "threads": threads, "remote": remote, "remote_wait_ms": remote_wait_ms,
            "restart_failed": restart_failed, "max_seq_len": max_seq_len, "state_in": state_in,
        }
        for k in ("num_envs", "workers", "seed", "fragment_length", "threads", "remote_wait_ms", "max_seq_len"):
            v = opts[k]
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                raise ValueError(f"{k}: want an int, got {v!r}")
            opts[k] = int(v)
        if policy is not None:
            opts["model"] = str(policy)
        if policies is not None:
            opts["policies"] = {str(k): str(v) for k, v in dict(policies).items()}
        if policy_map is not None:
            pairs = list(policy_map.items()) if isinstance(policy_map, Mapping) else list(policy_map)
            opts["policy_map"] = [[str(a), str(p)] for a, p in pairs]
        if env_config is not None:
            opts["env_config"] = dict(env_config)
        if max_model_bytes is not None:
            opts["max_model_bytes"] = int(max_model_bytes)
        self._lib = lib = _lib.lib()
        _declare(lib)
        h = ctypes.c_void_p()
        _lib.check(lib.onnxrl_sampler_open(json.dumps(opts).encode(), ctypes.byref(h)))
        self._h = h.value
        p, n = ctypes.c_char_p(), ctypes.c_size_t()
        _lib.check(lib.onnxrl_sampler_info(self._h, ctypes.byref(p), ctypes.byref(n)))
        #: What was built: env, model, num_envs, workers, policies (ids, sorted), agents,
        #: observation_space and action_space (as JSON), fragment_length, batch_mode, seed.
        self.info: dict[str, Any] = json.loads(ctypes.string_at(p, n.value))
        self.env: str = self.info["env"]
        self.num_envs: int = self.info["num_envs"]
        self.policies: list[str] = list(self.info["policies"])
        self.observation_space = _spaces.from_json(self.info["observation_space"])
        self.action_space = _spaces.from_json(self.info["action_space"])
        self._multi = policies is not None
        self._cols = ctypes.POINTER(_Column)()
        self._ncols, self._rows = ctypes.c_int64(), ctypes.c_int64()
        self._env_steps, self._agent_steps = ctypes.c_int64(), ctypes.c_int64()
        # Arrays over the library's memory by (address, dtype, shape): the batches' storage
        # alternates between a few places, so most views are made once.
        self._views: dict[tuple, np.ndarray] = {}
        self._have_batch = False

    def _handle(self) -> int:
        h = self._h
        if h is None:
            raise StateError("onnxrl_sampler: the sampler is closed", -3, "ONNXRL_ERR_STATE")
        return h

    def _view(self, ptr: int, dtype: int, ndim: int, rows: int, width: int) -> np.ndarray:
        key = (ptr, dtype, ndim, rows, width)
        a = self._views.get(key)
        if a is None:
            dt = _DTYPES[dtype]
            n = rows * width
            if n == 0 or not ptr:
                a = np.empty((rows, width) if ndim == 2 else (rows,), dtype=dt)
            else:
                buf = (ctypes.c_char * (n * dt.itemsize)).from_address(ptr)
                a = np.frombuffer(buf, dtype=dt, count=n)
                if ndim == 2:
                    a = a.reshape(rows, width)
            a.flags.writeable = False
            if len(self._views) > 512:
                self._views.clear()
            self._views[key] = a
        return a

    def _policy_batch(self, h: int, i: int) -> dict[str, np.ndarray]:
        _lib.check(self._lib.onnxrl_sampler_columns(h, i, ctypes.byref(self._cols), ctypes.byref(self._ncols),
                                                    ctypes.byref(self._rows)))
        cols = self._cols
        out = {}
        for k in range(self._ncols.value):
            c = cols[k]
            shape = c.shape
            out[c.name.decode()] = self._view(c.data or 0, c.dtype, c.ndim, shape[0], shape[1])
        return out

    def sample(self) -> Batch:
        """Steps until the next sample batch and returns it: a dict of read-only NumPy views
        (see the class doc), valid until the next call. With several policies, a dict of such
        dicts by policy id."""
        h = self._handle()
        _lib.check(self._lib.onnxrl_sampler_sample(h, ctypes.byref(self._env_steps), ctypes.byref(self._agent_steps)))
        self._have_batch = True
        if not self._multi:
            return self._policy_batch(h, 0)
        out = {}
        for i, pid in enumerate(self.policies):
            b = self._policy_batch(h, i)
            if self._rows.value:
                out[pid] = b
        return out

    @property
    def last_env_steps(self) -> int:
        """The env steps of the last batch."""
        return self._env_steps.value

    @property
    def last_agent_steps(self) -> int:
        """The agent steps of the last batch."""
        return self._agent_steps.value

    def __iter__(self) -> Iterator[Batch]:
        """Batch after batch, without end (``itertools.islice(sampler, n)`` takes n); each
        valid until the next."""
        while True:
            yield self.sample()

    def to_arrow(self) -> Any:
        """The last batch as a ``pyarrow.RecordBatch``, through the Arrow C Data Interface without
        a copy of its float32 and integer columns (the same memory as :meth:`sample`'s arrays),
        with ``agent_id`` and ``module_id`` string columns and every policy's rows. Valid until
        the next :meth:`sample`; needs pyarrow."""
        h = self._handle()
        if not self._have_batch:
            raise StateError("onnxrl_sampler: no batch yet: call sample() first", -3, "ONNXRL_ERR_STATE")
        try:
            import pyarrow as pa
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("Sampler.to_arrow needs pyarrow (pip install pyarrow)") from e
        arr = ctypes.create_string_buffer(_ARROW_ARRAY_SIZE)
        sch = ctypes.create_string_buffer(_ARROW_SCHEMA_SIZE)
        _lib.check(self._lib.onnxrl_sampler_export_arrow(h, arr, sch))
        # pyarrow moves both structs' contents (and their release callbacks) into its objects.
        return pa.RecordBatch._import_from_c(ctypes.addressof(arr), ctypes.addressof(sch))

    def metrics(self) -> dict[str, Any]:
        """Counters (num_env_steps_sampled_lifetime, num_agent_steps_sampled_lifetime,
        num_episodes_lifetime, num_env_step_failures, batches), the episodes that ended since
        the last call (num_episodes, episode_return_mean/min/max, episode_len_mean: None
        without one) and the mean step times (perf): RLlib's new API stack names
        (docs/metrics.md)."""
        h = self._handle()
        p, n = ctypes.c_char_p(), ctypes.c_size_t()
        _lib.check(self._lib.onnxrl_sampler_metrics(h, ctypes.byref(p), ctypes.byref(n)))
        return json.loads(ctypes.string_at(p, n.value))

    def close(self) -> None:
        """Stops the workers and releases the sampler (a second close does nothing); the last
        batch's arrays must not be used after it."""
        lock = getattr(self, "_close_lock", None)
        if lock is None:
            return
        with lock:
            h, self._h = self._h, None
        self._views = {}
        if h is not None:
            _lib.check(self._lib.onnxrl_sampler_close(h))

    @property
    def closed(self) -> bool:
        return self._h is None

    def __enter__(self) -> "Sampler":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        state = "closed" if self._h is None else f"num_envs={self.num_envs}, policies={self.policies}"
        return f"Sampler({self.env!r}, {state})"
