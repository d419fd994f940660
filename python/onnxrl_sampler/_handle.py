"""What Policy and Env share: a handle of the library, released once by close(), by the end
of a with block, or when the object is collected."""

from __future__ import annotations

import threading
from typing import Any, Optional, TypeVar

from . import _lib

_H = TypeVar("_H", bound="_Handle")


class _Handle:
    """A library handle in ``_h``, released by the C function named ``_release``."""

    _release: str
    _lib: Any
    _h: Optional[int] = None

    def _set_handle(self, h: int) -> None:
        self._h = h
        self._close_lock = threading.Lock()

    def _release_handle(self) -> None:
        """Releases the handle once, waiting for the calls in flight (the C side does)."""
        lock = getattr(self, "_close_lock", None)
        if lock is None:  # __init__ failed before the handle was made
            return
        with lock:
            h, self._h = self._h, None
        if h is not None:
            _lib.check(getattr(self._lib, self._release)(h))

    def close(self) -> None:
        self._release_handle()

    def __enter__(self: _H) -> _H:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
