"""Actions in their space's own type and shape (as gymnasium's spaces have them), for Policy
and Env.

The C API moves actions as float32 rows of ``action_size`` values (a Discrete action is its
index as a float). Python callers get them as gymnasium's spaces hold them: a Discrete action
is an int64 of shape ``()`` (``(n,)`` for a batch), MultiDiscrete int64 ``(k,)``, MultiBinary
int8 ``(k,)``, a Box float32 of its shape. Integer actions pass through a float32 scratch
array (they are small integers: exact in float32).
"""

from __future__ import annotations

import ctypes
import json
from typing import Any, Optional

import numpy as np

from . import _lib
from ._arrays import out_array

_INT_TYPES = {"Discrete": np.int64, "MultiDiscrete": np.int64, "MultiBinary": np.int8}


def space_json(lib: Any, fn: str, h: int, which: int) -> Optional[dict[str, Any]]:
    """The space ``which`` (0 observation, 1 action) of handle h from onnxrl_{policy,env}_space,
    or None when the library predates that function."""
    f = getattr(lib, fn, None)
    if f is None:
        return None
    f.restype, f.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                                           ctypes.c_void_p]
    n = ctypes.c_size_t()
    _lib.check(f(h, which, None, 0, ctypes.byref(n)))
    buf = ctypes.create_string_buffer(n.value + 1)
    _lib.check(f(h, which, buf, n.value + 1, ctypes.byref(n)))
    return json.loads(buf.value.decode())


class ActionLayout:
    """How the actions of one space look in Python: ``dtype`` and ``shape`` of one action."""

    def __init__(self, space: Optional[dict[str, Any]], size: int) -> None:
        kind = space.get("type") if space else None
        self.space = space
        self.size = size
        self.dtype = np.dtype(_INT_TYPES.get(kind, np.float32))
        self.integer = kind in _INT_TYPES
        if kind == "Discrete":
            self.shape: tuple[int, ...] = ()
        elif kind == "Box" and space is not None and int(np.prod(space.get("shape", [size]))) == size:
            self.shape = tuple(int(d) for d in space["shape"])
        else:
            self.shape = (size,)

    def out(self, out: Any, n: Optional[int], what: str) -> tuple[np.ndarray, np.ndarray]:
        """(the caller's actions array, the float32 array the library writes into).

        n None: one action. ``out`` must be a writable C-contiguous array of the action's dtype
        and shape (with n rows first); None allocates.
        """
        shape = self.shape if n is None else (n, *self.shape)
        if not self.integer:
            a = out_array(out, shape, what)
            return a, a
        if out is None:
            a = np.empty(shape, self.dtype)
        elif not isinstance(out, np.ndarray) or out.dtype != self.dtype or not out.flags.c_contiguous:
            kind = self.space["type"] if self.space else "the space"
            raise ValueError(f"{what}: want a C-contiguous {self.dtype} numpy.ndarray of shape {shape} "
                             f"(the actions of {kind} are integers)")
        elif out.shape != shape:
            raise ValueError(f"{what}: shape {out.shape}, want {shape}")
        elif not out.flags.writeable:
            raise ValueError(f"{what}: the array is read-only")
        else:
            a = out
        return a, np.empty(self.size if n is None else (n, self.size), np.float32)

    def finish_written(self, actions: np.ndarray, raw: np.ndarray) -> None:
        """After a failed call that wrote its first rows (raw filled with NaN before it): copies
        the rows that were written."""
        if raw is not actions:
            rows = ~np.isnan(raw).any(axis=1)
            actions[rows] = raw[rows].reshape(actions[rows].shape)

    def finish(self, actions: np.ndarray, raw: np.ndarray) -> np.ndarray:
        """Copies the library's float32 actions into the integer array (nothing for floats)."""
        if raw is not actions:
            np.copyto(actions, raw.reshape(actions.shape), casting="unsafe")
        return actions
