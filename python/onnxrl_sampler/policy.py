"""Policy: batch inference with an exported policy (onnxrl_policy_* of the C API)."""

from __future__ import annotations

import ctypes
from typing import Any, Tuple, Union

import numpy as np

from . import _lib
from ._actions import ActionLayout, space_json
from ._handle import _Handle
from ._arrays import data_ptr, options_json, out_array, rows_of
from .errors import StateError

ActResult = Union[np.ndarray, Tuple[np.ndarray, ...]]


class Policy(_Handle):
    """An exported policy for batch inference, safe to use from several threads at once.

    Args:
        model: an ``.onnx`` path (its policy spec from ``<model>.policy.json`` or the model's
            ``onnxrl.policy`` metadata) or a bundled model name such as ``"cartpole_mlp"``.
        device: ``"cpu"`` or ``"cuda[:N]"``.
        seed: seed of the action sampling (``explore=True``): the same seed and calls give the
            same actions.
        threads: ONNX Runtime intra-op threads per session.
        workers: sessions, so calls computed at once from different threads.
        normalize_actions: map Box actions from [-1, 1] to the space's bounds (RLlib's option).
        clip_actions: clip Box actions to the space's bounds.
        max_model_bytes: the largest model file read (default 1 GiB). The model must be a
            regular file under it, checked before it is read (:class:`LimitError` beyond;
            :class:`ModelError` for a device or pipe such as /dev/zero).

    Recurrent policies are refused (:class:`ModelError`): use :class:`Env`, which keeps each
    episode's state. Release with :meth:`close` or a ``with`` block.

    Example::

        with Policy("cartpole_mlp") as p:
            actions = p.act(np.zeros((256, 4), np.float32))        # int64, shape (256,)
            actions, logp, values = p.act(obs, logp=True, values=True)
    """

    _release = "onnxrl_policy_close"

    def __init__(self, model: str, device: str = "cpu", seed: int = 0, *, threads: int = 1,
                 workers: int = 1, normalize_actions: bool = True, clip_actions: bool = False,
                 max_model_bytes: int = 1 << 30) -> None:
        self._lib = _lib.lib()
        opts = options_json({"device": device, "seed": seed, "threads": threads, "workers": workers,
                             "normalize_actions": normalize_actions, "clip_actions": clip_actions,
                             "max_model_bytes": max_model_bytes})
        h = ctypes.c_void_p()
        _lib.check(self._lib.onnxrl_policy_open(str(model).encode(), opts, ctypes.byref(h)))
        self._set_handle(h.value)
        o, a = ctypes.c_int64(), ctypes.c_int64()
        _lib.check(self._lib.onnxrl_policy_sizes(self._h, ctypes.byref(o), ctypes.byref(a)))
        #: Values of one observation (float32).
        self.obs_size: int = o.value
        #: Values of one action in the C API (float32; a Discrete action is its index as a float).
        self.action_size: int = a.value
        #: One action as the action space has it (act returns these): int64 of shape () for a
        #: Discrete space, int64 (k,) MultiDiscrete, int8 (k,) MultiBinary, float32 a Box's shape.
        self.action_layout = ActionLayout(space_json(self._lib, "onnxrl_policy_space", self._h, 1), a.value)
        self.model = str(model)
        self._act = self._lib.onnxrl_policy_act

    def act(self, obs: np.ndarray, explore: bool = False, out: Any = None, *,
            logp: bool = False, values: bool = False) -> ActResult:
        """Computes the actions of a batch of observations.

        Args:
            obs: float32, C-contiguous, shape ``(n, obs_size)`` or ``(n, *observation_shape)``;
                or ``(obs_size,)`` for a single observation (then the results have no batch
                axis). Read in place, never copied; wrong dtypes and shapes are a ValueError.
            explore: sample from the action distribution (seeded) instead of taking its mode.
            out: where to write: an array like the actions (dtype and shape) for them, or,
                with ``logp``/``values``, a tuple of arrays in the order of the results
                (``(n,)`` each for log-probabilities and values). None allocates.
            logp: also return the log-probability of each action.
            values: also return the value output (InvalidArgumentError for a model without one).

        Returns:
            The actions as the action space has them, n first (``action_layout``): a Discrete
            space gives int64 ``(n,)``, a Box float32 ``(n, *shape)``; without the batch axis
            for a single observation. Or the tuple ``(actions[, logp][, values])`` when ``logp``
            or ``values`` is asked for.

        Raises:
            ValueError: a bad array (dtype, shape, layout); InvalidArgumentError (also a
                ValueError) for an observation outside the observation space, in which case
                nothing is written.
            StateError: the policy is closed.
        """
        h = self._h
        if h is None:
            raise StateError("onnxrl_sampler: the policy is closed", -3, "ONNXRL_ERR_STATE")
        n = rows_of(obs, self.obs_size, "obs")
        single = n < 0
        if single:
            n = 1
        layout, rows = self.action_layout, None if single else n
        if not (logp or values):  # the common case, kept short: it counts at batch 1
            actions, raw = layout.out(out, rows, "out")
            st = self._act(h, data_ptr(obs), n, 1 if explore else 0, data_ptr(raw), None, None)
            if st:
                _lib.raise_status(st)
            return layout.finish(actions, raw)
        vshape = () if single else (n,)
        want = 1 + logp + values
        if out is None:
            out = (None,) * want
        elif not isinstance(out, tuple) or len(out) != want:
            raise ValueError(f"out: want a tuple of {want} arrays (actions[, logp][, values])")
        actions, raw = layout.out(out[0], rows, "out[0] (actions)")
        lp = out_array(out[1], vshape, "out[1] (logp)") if logp else None
        vals = out_array(out[want - 1], vshape, "out[-1] (values)") if values else None
        st = self._act(h, data_ptr(obs), n, 1 if explore else 0, data_ptr(raw),
                       None if lp is None else data_ptr(lp), None if vals is None else data_ptr(vals))
        if st:
            _lib.raise_status(st)
        layout.finish(actions, raw)
        if lp is None:
            return actions, vals
        if vals is None:
            return actions, lp
        return actions, lp, vals

    def close(self) -> None:
        """Releases the policy, waiting for calls in flight. Safe to call twice."""
        self._release_handle()


    def __repr__(self) -> str:
        state = "closed" if self._h is None else f"obs_size={self.obs_size}, action_size={self.action_size}"
        return f"Policy({self.model!r}, {state})"
