"""Env: RLlib's ExternalEnv episode API for simulators written in Python (onnxrl_env_* and
onnxrl_episode_* of the C API)."""

from __future__ import annotations

import ctypes
import threading
from typing import Any, Optional, Sequence

import numpy as np

from . import _lib
from ._actions import ActionLayout, space_json
from ._handle import _Handle
from ._arrays import data_ptr, options_json, rows_of
from .errors import StateError

_ID_CAP = 64  # a generated id is a UUID (36 characters and the NUL)


class Env(_Handle):
    """An environment with inverted control: your simulator runs episodes and asks for actions.

    Requests for actions from all episodes (and threads) are answered by a sampler inside the
    library with one batched inference per step; the transitions are recorded by the Go side
    into ``out``. Every method is safe to call from several threads at once (each episode from
    one thread at a time).

    Args:
        model: an ``.onnx`` path or a bundled model name (recurrent policies included: each
            episode's state is kept by the sampler).
        out: the file to record the sample batches in: Parquet for a ``.parquet`` name (RLlib's
            offline columns, snappy), RLlib's offline JSON lines otherwise (rotated into
            ``x-000001.parquet``, ... at ``max_file_size``; ``format=`` and ``compression=``
            options override). None records nothing.
        max_episodes: most episodes running at once (LimitError beyond).
        explore: sample actions from the distribution (False: the mode).
        seed: seed of the action sampling.
        **options: the other keys of ``onnxrl_env_open``: ``device``, ``threads``,
            ``max_wait_us``, ``max_batch``, ``timeout_ms``, ``fragment_length``,
            ``max_file_size``, ``flush_interval_ms`` (with ``out``: write and close the file
            durably at least this often, default 5000; 0: only full fragments and at close),
            ``normalize_actions``, ``clip_actions``, ``max_model_bytes``
            (the largest model file read, default 1 GiB), ``raise_gomaxprocs`` (default True:
            threads waiting in get_action(s) raise the library's GOMAXPROCS; see the C
            header). A misspelt key is an InvalidArgumentError; a device this machine cannot
            give is a DeviceError.

    Observations are float32 rows of ``obs_size`` values. Actions come as the action space has
    them (``action_layout``): an int64 of shape ``()`` for a Discrete space (``(n,)`` from
    get_actions), float32 of a Box's shape.

    Example::

        with Env("cartpole_mlp", out="data.jsonl") as env:
            eid = env.start_episode()
            action = env.get_action(eid, obs)
            env.log_returns(eid, 1.0)
            env.end_episode(eid, final_obs)
    """

    _release = "onnxrl_env_close"

    def __init__(self, model: str, out: Optional[str] = None, max_episodes: int = 100,
                 explore: bool = True, seed: int = 0, **options: Any) -> None:
        self._lib = _lib.lib()
        opts = options_json({"out": None if out is None else str(out), "max_episodes": max_episodes,
                             "explore": explore, "seed": seed, **options})
        h = ctypes.c_void_p()
        _lib.check(self._lib.onnxrl_env_open(str(model).encode(), opts, ctypes.byref(h)))
        self._set_handle(h.value)
        o, a = ctypes.c_int64(), ctypes.c_int64()
        _lib.check(self._lib.onnxrl_env_sizes(self._h, ctypes.byref(o), ctypes.byref(a)))
        #: Values of one observation (float32).
        self.obs_size: int = o.value
        #: Values of one action in the C API (float32).
        self.action_size: int = a.value
        #: One action as the action space has it (get_action(s) return these): int64 of shape ()
        #: for a Discrete space, float32 a Box's shape, ... (see Policy.action_layout).
        self.action_layout = ActionLayout(space_json(self._lib, "onnxrl_env_space", self._h, 1), a.value)
        self.model = str(model)
        self.out = out
        # get_actions keeps the C array of the last ids it was given: a vectorized simulator
        # asks for the same episodes step after step.
        self._ids_local = threading.local()
        self._log_returns = self._lib.onnxrl_episode_log_returns

    def _handle(self) -> int:
        h = self._h
        if h is None:
            raise StateError("onnxrl_sampler: the env is closed", -3, "ONNXRL_ERR_STATE")
        return h

    def start_episode(self, episode_id: Optional[str] = None, training_enabled: bool = True) -> str:
        """Starts an episode and returns its id (a generated UUID when none is given).

        ``training_enabled=False`` runs the episode without recording it. Raises LimitError
        beyond ``max_episodes``, StateError for an id that is running or has ended.
        """
        h = self._handle()
        buf = ctypes.create_string_buffer(_ID_CAP)
        eid = None if episode_id is None else _id_bytes(episode_id)
        _lib.check(self._lib.onnxrl_episode_start(h, eid, 1 if training_enabled else 0, buf, _ID_CAP))
        return buf.value.decode() if episode_id is None else episode_id

    def get_action(self, episode_id: str, observation: np.ndarray, out: Optional[np.ndarray] = None) -> np.ndarray:
        """Reports an observation (float32, ``obs_size`` values) and waits for the action.

        Returns the action as the action space has it (``action_layout``: an int64 of shape
        ``()`` for a Discrete space, float32 of a Box's shape), written into ``out`` when given
        (an array of that dtype and shape). Raises
        NotFoundError for an unknown episode, StateError for one that has ended or already
        waits, InvalidArgumentError for an observation outside the space, ActionTimeoutError.
        """
        h = self._handle()
        if rows_of(observation, self.obs_size, "observation") not in (-1, 1):
            raise ValueError(f"observation: shape {observation.shape}: want one row of {self.obs_size} values")
        act, raw = self.action_layout.out(out, None, "out")
        st = self._lib.onnxrl_episode_get_action(h, _id_bytes(episode_id), data_ptr(observation), data_ptr(raw))
        if st:
            _lib.raise_status(st)
        return self.action_layout.finish(act, raw)

    def get_actions(self, episode_ids: Sequence[str], observations: np.ndarray,
                    out: Optional[np.ndarray] = None) -> np.ndarray:
        """get_action for n different episodes at once, from one thread (a vectorized simulator).

        Args:
            episode_ids: n ids of running episodes, all different.
            observations: float32, C-contiguous, shape ``(n, obs_size)`` (or ``(n, *shape)``).
            out: the actions' destination, like the result; None allocates.

        Returns:
            The actions as the action space has them, n first (int64 ``(n,)`` for a Discrete
            space, float32 ``(n, *shape)`` for a Box). All n are answered by the same sampler in
            as few inferences as the batching allows. If episode i fails, the exception names
            it and the rows before i hold their actions.
        """
        h = self._handle()
        n = rows_of(observations, self.obs_size, "observations")
        if n != len(episode_ids):
            raise ValueError(f"observations: {max(n, 1)} rows for {len(episode_ids)} episode ids")
        act, raw = self.action_layout.out(out, n, "out")
        if raw is not act:
            raw.fill(np.nan)  # the rows a failing call leaves alone (see finish_written)
        st = self._lib.onnxrl_episode_get_actions(h, self._id_array(episode_ids), n,
                                                  data_ptr(observations), data_ptr(raw))
        if st:
            self.action_layout.finish_written(act, raw)
            _lib.raise_status(st)
        return self.action_layout.finish(act, raw)

    def _id_array(self, episode_ids: Sequence[str]) -> Any:
        """The C array of the ids, reused while a thread asks for the same ids."""
        loc = self._ids_local
        key = tuple(episode_ids)
        if getattr(loc, "key", None) != key:
            enc = [_id_bytes(i) for i in key]
            loc.arr = (ctypes.c_char_p * len(enc))(*enc)
            loc.enc = enc  # keeps the bytes alive as long as the array
            loc.key = key
        return loc.arr

    def log_action(self, episode_id: str, observation: np.ndarray, action: np.ndarray) -> None:
        """Reports an observation with the action the simulator took itself (recorded instead
        of the policy's). Does not wait. ``action``: float32, ``action_size`` values, or for an
        integer space an integer (array) as get_action returns it."""
        h = self._handle()
        if self.action_layout.integer and not (isinstance(action, np.ndarray) and action.dtype == np.float32):
            a = np.asarray(action)
            if a.dtype.kind not in "iu" or a.size != self.action_size:
                raise ValueError(f"action: {action!r}: want {self.action_size} integer value(s) of the action space")
            action = a.astype(np.float32).reshape(self.action_size)
        if rows_of(observation, self.obs_size, "observation") not in (-1, 1):
            raise ValueError(f"observation: shape {observation.shape}: want one row of {self.obs_size} values")
        if rows_of(action, self.action_size, "action") not in (-1, 1):
            raise ValueError(f"action: shape {action.shape}: want one row of {self.action_size} values")
        _lib.check(self._lib.onnxrl_episode_log_action(h, _id_bytes(episode_id), data_ptr(observation),
                                                       data_ptr(action)))

    def log_returns(self, episode_id: str, reward: float) -> None:
        """Adds reward to the episode's current step (summed until its next observation).

        A reward, or a step's sum of rewards, that float32 cannot hold (NaN, an infinity,
        beyond 3.4028235e+38 in magnitude) raises InvalidArgumentError and is not logged.
        """
        # Called once per episode and step: kept to the C call and the checks it needs.
        h = self._h
        if h is None:
            self._handle()
        eid = episode_id.encode() if type(episode_id) is str else _id_bytes(episode_id)
        if b"\0" in eid:
            _id_bytes(episode_id)
        st = self._log_returns(h, eid, float(reward))
        if st:
            _lib.raise_status(st)

    def log_returns_batch(self, episode_ids: Sequence[str], rewards: Any) -> None:
        """log_returns for n episodes in one call (``rewards[i]`` to ``episode_ids[i]``), for a
        vectorized simulator: one call into the library instead of n.

        Args:
            episode_ids: n ids of running episodes.
            rewards: n numbers that fit float32 (a sequence or an array; converted to float64).

        Every reward is checked before any is logged. If episode i fails, the exception names
        it and the episodes before i have their rewards logged.
        """
        h = self._handle()
        r = np.ascontiguousarray(rewards, dtype=np.float64)
        if r.ndim != 1 or r.shape[0] != len(episode_ids):
            raise ValueError(f"rewards: shape {r.shape} for {len(episode_ids)} episode ids")
        n = len(episode_ids)
        if n == 0:
            return
        st = self._lib.onnxrl_episode_log_returns_batch(h, self._id_array(episode_ids), n, data_ptr(r))
        if st:
            _lib.raise_status(st)

    def end_episode(self, episode_id: str, observation: np.ndarray, truncated: bool = False) -> None:
        """Ends the episode with its final observation.

        ``truncated=True`` marks a time limit or a simulator giving up: the return is then
        bootstrapped from the value of the observation instead of zero.
        """
        h = self._handle()
        if rows_of(observation, self.obs_size, "observation") not in (-1, 1):
            raise ValueError(f"observation: shape {observation.shape}: want one row of {self.obs_size} values")
        f = self._lib.onnxrl_episode_end_truncated if truncated else self._lib.onnxrl_episode_end
        _lib.check(f(h, _id_bytes(episode_id), data_ptr(observation)))

    def close(self) -> None:
        """Releases the env: running episodes end truncated, everything sampled is written and
        the file is closed (OutputError if writing failed). Waits for calls in flight. Safe to
        call twice."""
        self._release_handle()


    def __repr__(self) -> str:
        state = "closed" if self._h is None else f"obs_size={self.obs_size}, action_size={self.action_size}"
        return f"Env({self.model!r}, out={self.out!r}, {state})"


def _id_bytes(episode_id: str) -> bytes:
    if not isinstance(episode_id, str):
        raise ValueError(f"episode_id: want a str, got {type(episode_id).__name__}")
    b = episode_id.encode()
    if b"\0" in b:
        raise ValueError("episode_id: contains a NUL character")
    return b
