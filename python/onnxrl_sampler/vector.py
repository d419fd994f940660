"""make_vec: the library's built-in environments, vectorized, with gymnasium's VectorEnv API
(onnxrl_vec_env_* of the C API).

With gymnasium (1.x) importable, :class:`VectorEnv` is a subclass of
``gymnasium.vector.VectorEnv`` and its spaces are gymnasium's; without it, it has the same
methods and attributes (duck typing) with the stand-in spaces of :mod:`onnxrl_sampler.spaces`.
"""

from __future__ import annotations

import ctypes
import json
import threading
from typing import Any, Optional, Sequence, Union

import numpy as np

from . import _lib
from . import spaces as _spaces
from ._arrays import data_ptr
from .errors import StateError

try:
    import gymnasium as _gym
    from gymnasium.vector import VectorEnv as _Base
except ImportError:
    _gym = None
    _Base = object

__all__ = ["make_vec", "VectorEnv"]

_U64 = ctypes.c_uint64
_SIZE = ctypes.c_size_t


def _declare(lib: ctypes.CDLL) -> None:
    """Sets the prototypes of onnxrl_vec_env_* (once per process)."""
    if getattr(lib, "_onnxrl_vec_declared", False):
        return
    i, p, i64, c, z = ctypes.c_int, ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p, ctypes.c_size_t
    protos = {
        "onnxrl_vec_env_open": (i, [c, c, i64, ctypes.c_uint64, p]),
        "onnxrl_vec_env_sizes": (i, [p, p, p, p]),
        "onnxrl_vec_env_space": (i, [p, i, p, z, p]),
        "onnxrl_vec_env_reset": (i, [p, p, i64, p, p]),
        "onnxrl_vec_env_step": (i, [p, p, p, p, p, p, p]),
        "onnxrl_vec_env_infos": (i, [p, p, z, p]),
        "onnxrl_vec_env_close": (i, [p]),
    }
    for name, (res, args) in protos.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    lib._onnxrl_vec_declared = True


def _text(lib: Any, call: Any, *args: Any) -> str:
    """A string the library writes into a caller's buffer (asked for its length first)."""
    n = _SIZE()
    _lib.check(call(*args, None, 0, ctypes.byref(n)))
    if n.value == 0:
        return ""
    buf = ctypes.create_string_buffer(n.value + 1)
    _lib.check(call(*args, buf, n.value + 1, ctypes.byref(n)))
    return buf.value.decode()


def make_vec(name: str, num_envs: int, seed: int = 0, *, copy: bool = True, **config: Any) -> "VectorEnv":
    """Makes ``num_envs`` sub-environments of a built-in environment, vectorized.

    Args:
        name: a registered single-agent environment (``"CartPole-v1"``, ``"Pendulum-v1"``,
            ``"MountainCar-v0"``, ...; ``sample run --list-envs`` lists them).
        num_envs: the number of sub-environments.
        seed: sub-environment i starts its first episode from seed + i, unless the first
            :meth:`VectorEnv.reset` passes a seed.
        copy: True (the default, as gymnasium's ``SyncVectorEnv(copy=True)``): every step
            returns new arrays. False: the same arrays, overwritten by the next step or reset.
        **config: the environment's config keys (``max_episode_steps=200``, ...); unknown keys
            are a ValueError.

    Returns:
        A :class:`VectorEnv` (a ``gymnasium.vector.VectorEnv`` when gymnasium is installed).

    Example::

        envs = onnxrl_sampler.make_vec("CartPole-v1", 256, seed=0)
        obs, infos = envs.reset()                      # obs: float32 (256, 4)
        obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())
    """
    return VectorEnv(name, num_envs, seed, copy=copy, **config)


class VectorEnv(_Base):  # type: ignore[misc, valid-type]
    """Sub-environments of a built-in environment stepped together inside the library, with
    gymnasium 1.x's VectorEnv API and its default autoreset mode (next step).

    Attributes:
        num_envs, single_observation_space, single_action_space, observation_space,
        action_space (the batched spaces, as gymnasium's ``batch_space`` makes them),
        metadata (``{"autoreset_mode": AutoresetMode.NEXT_STEP}`` with gymnasium),
        render_mode (None), spec (None), closed, name, config.

    Actions: an array of the batched action space's shape: for a Discrete space, integers of
    shape ``(num_envs,)`` (any integer dtype); for a Box, numbers of shape
    ``(num_envs, *shape)`` (cast to float32; out-of-range values are clipped by the
    environments, as gymnasium's do). A wrong dtype or shape, an integer out of range or a
    NaN is a ValueError and changes nothing: the environment stays usable.

    Autoreset (next step): when sub-environment i ends its episode on step t (terminated or
    truncated), step t+1 resets it instead: row i then holds the new episode's first
    observation, reward 0, both flags False, and its action is ignored.

    Observations, rewards (float64) and flags (bool) are written by the library straight into
    arrays this object owns; with ``copy=True`` each step returns copies of them.
    """

    def __init__(self, name: str, num_envs: int, seed: int = 0, *, copy: bool = True, **config: Any) -> None:
        self.closed = True  # until the handle exists (close and __del__ look at it)
        self._h: Optional[int] = None
        if not isinstance(num_envs, (int, np.integer)) or isinstance(num_envs, bool) or num_envs < 1:
            raise ValueError(f"num_envs: want a positive int, got {num_envs!r}")
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or not 0 <= seed < 2**64:
            raise ValueError(f"seed: want an int in [0, 2**64), got {seed!r}")
        self._lib = lib = _lib.lib()
        _declare(lib)
        h = ctypes.c_void_p()
        _lib.check(lib.onnxrl_vec_env_open(str(name).encode(), json.dumps(config).encode(), int(num_envs),
                                           int(seed), ctypes.byref(h)))
        self._h = h.value
        self._close_lock = threading.Lock()
        self.closed = False
        n, o, a = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
        _lib.check(lib.onnxrl_vec_env_sizes(self._h, ctypes.byref(n), ctypes.byref(o), ctypes.byref(a)))
        self.num_envs: int = n.value
        self.name, self.config, self._copy = str(name), dict(config), bool(copy)
        self.single_observation_space = _spaces.from_json(json.loads(_text(lib, lib.onnxrl_vec_env_space, self._h, 0)))
        self.single_action_space = _spaces.from_json(json.loads(_text(lib, lib.onnxrl_vec_env_space, self._h, 1)))
        self.observation_space = _spaces.batch(self.single_observation_space, self.num_envs)
        self.action_space = _spaces.batch(self.single_action_space, self.num_envs)
        self.metadata = {"autoreset_mode": _gym.vector.AutoresetMode.NEXT_STEP} if _gym is not None else \
            {"autoreset_mode": "next_step"}
        self.render_mode = None
        self.spec = None

        nn = self.num_envs
        # The library's buffers: written in place by every reset and step.
        self._obs_raw = np.zeros((nn, o.value), np.float32)
        self._rewards = np.zeros(nn, np.float64)
        self._flags = np.zeros((2, nn), np.uint8)
        self._actions = np.zeros((nn, a.value), np.float32)
        self._infos_len = _SIZE()
        self._terminations = self._flags[0].view(np.bool_)
        self._truncations = self._flags[1].view(np.bool_)
        self._obs = self._obs_view(self.single_observation_space)
        self._act_kind = self._action_kinds(self.single_action_space)
        self._act_shape = tuple(self.action_space.shape)
        self._act_view = self._actions.reshape(self._act_shape)
        self._step_args = (data_ptr(self._actions), data_ptr(self._obs_raw), data_ptr(self._rewards),
                           data_ptr(self._flags[0]), data_ptr(self._flags[1]), ctypes.byref(self._infos_len))
        self._step_fn = lib.onnxrl_vec_env_step

    # ---- layout ---------------------------------------------------------------------------

    def _obs_view(self, space: Any) -> Any:
        """A function of the raw float32 rows giving observations as the batched space has them."""
        shape = (self.num_envs, *space.shape)
        raw = self._obs_raw
        if np.dtype(space.dtype) == np.float32:
            view = raw.reshape(shape)
            return lambda copy: view.copy() if copy else view
        dtype = np.dtype(space.dtype)
        return lambda copy: raw.reshape(shape).astype(dtype)

    @staticmethod
    def _action_kinds(space: Any) -> str:
        """The dtype kinds an action array may have."""
        if np.dtype(space.dtype).kind in "iu":
            return "iu" + ("b" if type(space).__name__ == "MultiBinary" else "")
        return "fiu"

    def _write_actions(self, actions: Any) -> None:
        a = actions if isinstance(actions, np.ndarray) else np.asarray(actions)
        if a.shape != self._act_shape:
            raise ValueError(f"actions: shape {a.shape}, want {self._act_shape} (the action_space's, "
                             f"{self.num_envs} rows of {self.single_action_space})")
        if a.dtype.kind not in self._act_kind:
            want = "an integer dtype" if "f" not in self._act_kind else "a float or integer dtype"
            raise ValueError(f"actions: dtype {a.dtype}, want {want} for {self.single_action_space}")
        np.copyto(self._act_view, a, casting="unsafe")

    # ---- the VectorEnv API -----------------------------------------------------------------

    def _handle(self) -> int:
        h = self._h
        if h is None:
            raise StateError("onnxrl_sampler: the vector env is closed", -3, "ONNXRL_ERR_STATE")
        return h

    def reset(self, *, seed: Union[int, Sequence[int], None] = None,
              options: Optional[dict[str, Any]] = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets every sub-environment.

        Args:
            seed: None keeps each sub-environment's random stream (the first reset: the seed
                given to make_vec + i); an int s seeds sub-environment i with s + i; a sequence
                of num_envs ints seeds each.
            options: not supported by the built-in environments: None or {}.

        Returns:
            (observations, infos): observations of the batched observation space's shape.
        """
        h = self._handle()
        if options:
            raise ValueError(f"options: the built-in environments take no reset options, got {options!r}")
        seeds = None
        if seed is None:
            arr, n = None, 0
        else:
            seeds = [seed] if isinstance(seed, (int, np.integer)) else list(seed) if isinstance(seed, (list, tuple, np.ndarray)) else [seed]
            if len(seeds) not in (1, self.num_envs) or \
                    not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) and 0 <= s < 2**64 for s in seeds):
                raise ValueError(f"seed: want None, an int in [0, 2**64) or {self.num_envs} of them, got {seed!r}")
            arr, n = (_U64 * len(seeds))(*[int(s) for s in seeds]), len(seeds)
        _lib.check(self._lib.onnxrl_vec_env_reset(h, arr, n, data_ptr(self._obs_raw), ctypes.byref(self._infos_len)))
        if seeds is not None and len(seeds) == 1 and _gym is not None:
            super().reset(seed=int(seeds[0]))  # gymnasium's np_random
        return self._obs(self._copy), self._infos()

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Steps every sub-environment (resetting those whose episode ended on the last step).

        Args:
            actions: an array of the batched action space's shape (see the class doc).

        Returns:
            (observations, rewards, terminations, truncations, infos): rewards float64
            ``(num_envs,)``, terminations and truncations bool ``(num_envs,)``.

        Raises:
            ValueError: a wrong dtype or shape, an integer action out of range, NaN (nothing
                is stepped).
            StateError: the env is closed, or was never reset.
        """
        h = self._handle()
        self._write_actions(actions)
        st = self._step_fn(h, *self._step_args)
        if st:
            _lib.raise_status(st)
        if self._copy:
            return (self._obs(True), self._rewards.copy(), self._terminations.copy(), self._truncations.copy(),
                    self._infos())
        return self._obs(False), self._rewards, self._terminations, self._truncations, self._infos()

    def _infos(self) -> dict[str, Any]:
        """The infos of the last call as gymnasium's vector env gives them (arrays and masks)."""
        if self._infos_len.value == 0:
            return {}
        raw = json.loads(_text(self._lib, self._lib.onnxrl_vec_env_infos, self._handle()))
        out: dict[str, Any] = {}
        for k, v in raw.items():
            if k.startswith("_") and k[1:] in raw:
                out[k] = np.asarray(v, np.bool_)
                continue
            present = [x for x in v if x is not None]
            if present and all(isinstance(x, bool) for x in present):
                out[k] = np.asarray([bool(x) for x in v], np.bool_)
            elif present and all(isinstance(x, int) and not isinstance(x, bool) for x in present):
                out[k] = np.asarray([0 if x is None else x for x in v], np.int64)
            elif present and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in present):
                out[k] = np.asarray([0.0 if x is None else x for x in v], np.float64)
            else:
                arr = np.empty(len(v), object)
                arr[:] = v
                out[k] = arr
        return out

    def close(self, **kwargs: Any) -> None:
        """Releases the sub-environments. Safe to call twice."""
        lock = getattr(self, "_close_lock", None)
        if lock is None:
            return
        with lock:
            h, self._h = self._h, None
            self.closed = True
        if h is not None:
            _lib.check(self._lib.onnxrl_vec_env_close(h))

    def close_extras(self, **kwargs: Any) -> None:
        self.close()

    def render(self) -> None:
        """The built-in environments render nothing here (render_mode is None)."""
        return None

    def __enter__(self) -> "VectorEnv":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    if _gym is None:
        @property
        def unwrapped(self) -> "VectorEnv":
            return self

        @property
        def np_random(self) -> np.random.Generator:
            if getattr(self, "_np_random", None) is None:
                self._np_random = np.random.default_rng()
            return self._np_random

    def __repr__(self) -> str:
        state = "closed" if self._h is None else f"num_envs={self.num_envs}"
        return f"VectorEnv({self.name!r}, {state})"
