"""Spaces from the library's spaces JSON (``{"type":"Box","low":...}``), as gymnasium's.

With gymnasium importable, :func:`from_json` returns ``gymnasium.spaces`` objects and
:func:`batch` is ``gymnasium.vector.utils.batch_space``. Without it, the small classes below
stand in: the same names, attributes (``shape``, ``dtype``, ``low``/``high``, ``n``/``start``,
``nvec``) and the methods ``contains``, ``sample`` and ``seed``.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

try:  # gymnasium is optional
    import gymnasium as _gym
    from gymnasium.vector.utils import batch_space as _batch_space
except ImportError:  # pragma: no cover - exercised by the tests in a subprocess
    _gym = None
    _batch_space = None


class _Space:
    shape: tuple[int, ...]
    dtype: np.dtype

    def __init__(self, seed: Optional[int] = None) -> None:
        self._rng = np.random.default_rng(seed)

    def seed(self, seed: Optional[int] = None) -> None:
        self._rng = np.random.default_rng(seed)

    @property
    def np_random(self) -> np.random.Generator:
        return self._rng

    def __contains__(self, x: Any) -> bool:
        return self.contains(x)


class Box(_Space):
    """gymnasium's Box: values in [low, high] of ``shape`` and ``dtype``."""

    def __init__(self, low: Any, high: Any, shape: Optional[tuple[int, ...]] = None, dtype: Any = np.float32,
                 seed: Optional[int] = None) -> None:
        super().__init__(seed)
        self.dtype = np.dtype(dtype)
        if shape is None:
            shape = np.shape(low)
        self.shape = tuple(int(d) for d in shape)
        self.low = np.broadcast_to(np.asarray(low, self.dtype), self.shape).copy()
        self.high = np.broadcast_to(np.asarray(high, self.dtype), self.shape).copy()

    def contains(self, x: Any) -> bool:
        x = np.asarray(x)
        return bool(np.can_cast(x.dtype, self.dtype) and x.shape == self.shape
                    and np.all(x >= self.low) and np.all(x <= self.high))

    def sample(self) -> np.ndarray:
        lo = np.where(np.isfinite(self.low), self.low, -1.0)
        hi = np.where(np.isfinite(self.high), self.high, 1.0)
        return self._rng.uniform(lo, hi).astype(self.dtype)

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, Box) and self.shape == other.shape and self.dtype == other.dtype
                and np.array_equal(self.low, other.low) and np.array_equal(self.high, other.high))

    def __repr__(self) -> str:
        return f"Box({self.low}, {self.high}, {self.shape}, {self.dtype})"


class Discrete(_Space):
    """gymnasium's Discrete: an integer in [start, start + n), shape ()."""

    def __init__(self, n: int, start: int = 0, seed: Optional[int] = None) -> None:
        super().__init__(seed)
        self.n, self.start = np.int64(n), np.int64(start)
        self.shape, self.dtype = (), np.dtype(np.int64)

    def contains(self, x: Any) -> bool:
        if isinstance(x, (int, np.integer)) or (isinstance(x, np.ndarray) and x.shape == () and x.dtype.kind in "iu"):
            return bool(self.start <= int(x) < self.start + self.n)
        return False

    def sample(self) -> np.int64:
        return np.int64(self.start + self._rng.integers(self.n))

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Discrete) and self.n == other.n and self.start == other.start

    def __repr__(self) -> str:
        return f"Discrete({self.n})" if self.start == 0 else f"Discrete({self.n}, start={self.start})"


class MultiDiscrete(_Space):
    """gymnasium's MultiDiscrete: integers in [start, start + nvec), elementwise."""

    def __init__(self, nvec: Any, dtype: Any = np.int64, seed: Optional[int] = None, start: Any = None) -> None:
        super().__init__(seed)
        self.dtype = np.dtype(dtype)
        self.nvec = np.asarray(nvec, self.dtype)
        self.start = np.zeros_like(self.nvec) if start is None else np.asarray(start, self.dtype)
        self.shape = self.nvec.shape

    def contains(self, x: Any) -> bool:
        x = np.asarray(x)
        return bool(x.shape == self.shape and x.dtype.kind in "iu"
                    and np.all(self.start <= x) and np.all(x - self.start < self.nvec))

    def sample(self) -> np.ndarray:
        return (self.start + self._rng.integers(self.nvec)).astype(self.dtype)

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, MultiDiscrete) and np.array_equal(self.nvec, other.nvec)
                and np.array_equal(self.start, other.start))

    def __repr__(self) -> str:
        return f"MultiDiscrete({self.nvec})"


class MultiBinary(_Space):
    """gymnasium's MultiBinary: 0 or 1 (int8) of ``shape``."""

    def __init__(self, n: Any, seed: Optional[int] = None) -> None:
        super().__init__(seed)
        self.n = n
        self.shape = (int(n),) if np.isscalar(n) else tuple(int(d) for d in n)
        self.dtype = np.dtype(np.int8)

    def contains(self, x: Any) -> bool:
        x = np.asarray(x)
        return bool(x.shape == self.shape and x.dtype.kind in "iub" and np.all((x == 0) | (x == 1)))

    def sample(self) -> np.ndarray:
        return self._rng.integers(0, 2, self.shape, dtype=np.int8)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, MultiBinary) and self.shape == other.shape

    def __repr__(self) -> str:
        return f"MultiBinary({self.n})"


def _bound(v: Any) -> Any:
    """A JSON bound (a number, "inf"/"-inf", or nested lists of them) as float32 values."""
    if isinstance(v, list):
        return [_bound(x) for x in v]
    if isinstance(v, str):
        return float(v.replace("infinity", "inf"))
    return v


def from_json(d: dict[str, Any]) -> Any:
    """The space of a spaces JSON object: gymnasium's class when gymnasium is importable."""
    g = _gym.spaces if _gym is not None else None
    t = d.get("type")
    if t == "Box":
        shape = tuple(d["shape"])
        dtype = np.dtype(d.get("dtype", "float32"))
        low = np.broadcast_to(np.asarray(_bound(d["low"]), np.float64), shape).astype(dtype)
        high = np.broadcast_to(np.asarray(_bound(d["high"]), np.float64), shape).astype(dtype)
        return (g.Box if g else Box)(low, high, shape, dtype)
    if t == "Discrete":
        return (g.Discrete if g else Discrete)(int(d["n"]), start=int(d.get("start", 0)))
    if t == "MultiDiscrete":
        return (g.MultiDiscrete if g else MultiDiscrete)(np.asarray(d["nvec"], np.int64))
    if t == "MultiBinary":
        return (g.MultiBinary if g else MultiBinary)(d["n"])
    raise ValueError(f"onnxrl_sampler: a {t} space is not supported here (Box, Discrete, MultiDiscrete, MultiBinary)")


def batch(space: Any, n: int) -> Any:
    """The space of n stacked values of space, as gymnasium's batch_space makes it."""
    if _batch_space is not None:
        return _batch_space(space, n)
    if isinstance(space, Box):
        return Box(np.stack([space.low] * n), np.stack([space.high] * n), (n, *space.shape), space.dtype)
    if isinstance(space, Discrete):
        return MultiDiscrete(np.full((n,), space.n, np.int64), start=np.full((n,), space.start, np.int64))
    if isinstance(space, MultiDiscrete):
        return MultiDiscrete(np.stack([space.nvec] * n), start=np.stack([space.start] * n))
    if isinstance(space, MultiBinary):
        return MultiBinary((n, *space.shape))
    raise ValueError(f"onnxrl_sampler: cannot batch {space!r}")
