"""Finding and loading libonnxrl_sampler.so, its prototypes, and turning statuses into exceptions.

The library is looked for, in order:

1. the file named by the ``ONNXRL_SAMPLER_LIBRARY`` environment variable (only there when set);
2. this package's own folder;
3. CMake's folders: the build tree of a source checkout (``build/lib`` beside ``python/``) and the
   install prefixes (``<prefix>/lib`` for the Python prefix holding this package, ``sys.prefix``,
   ``/usr/local``);
4. the system's library path (``LD_LIBRARY_PATH``, ``ldconfig``'s cache).

The first file that loads wins; when none does, :class:`LibraryNotFoundError` lists every place
with the reason it failed. The library is loaded once per process (it holds a Go runtime and
cannot be unloaded; see include/onnxrl/sampler.h).

ONNX Runtime: the library finds it by itself (``ONNXRUNTIME_SHARED_LIBRARY_PATH``, beside the
library, a ``third_party/onnxruntime`` above the working directory, the system's path). When the
library comes from a source checkout and neither ``ONNXRUNTIME_SHARED_LIBRARY_PATH`` nor a copy
beside the library names the runtime, the checkout's ``third_party/onnxruntime/lib/libonnxruntime.so.1``
is loaded first, so that the package works from any working directory. (Setting the variable
from Python would not do: the Go runtime reads the environment the process started with.) The
library's look-up by name then finds the runtime already loaded.

A wheel (``make wheel``) puts the library, ``libonnxruntime.so.1`` and the execution provider
``libonnxrl_ep.so`` into this package's folder: the library is found there, and it looks beside
itself for the runtime and the provider before anywhere but ``ONNXRUNTIME_SHARED_LIBRARY_PATH``
and ``ONNXRL_EP_LIBRARY``, so an installed wheel needs no variable.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from typing import NoReturn

from .errors import STATUS_ERRORS, LibraryNotFoundError, SamplerError

LIBRARY_NAME = "libonnxrl_sampler.so"
ENV_LIBRARY = "ONNXRL_SAMPLER_LIBRARY"
ENV_RUNTIME = "ONNXRUNTIME_SHARED_LIBRARY_PATH"
#: The ABI version this package was written against (ONNXRL_ABI_VERSION of the header).
ABI_VERSION = 1

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


def candidate_paths() -> list[tuple[str, str]]:
    """The places looked in, in order, as (description, path or bare name) pairs."""
    env = os.environ.get(ENV_LIBRARY)
    if env:
        return [(f"${ENV_LIBRARY}", env)]
    out = [("the package's folder", os.path.join(_PKG_DIR, LIBRARY_NAME))]
    # A source checkout: <repo>/python/onnxrl_sampler -> <repo>/build/lib.
    repo = os.path.dirname(os.path.dirname(_PKG_DIR))
    out.append(("the source tree's CMake build", os.path.join(repo, "build", "lib", LIBRARY_NAME)))
    prefixes = []
    # <prefix>/lib/pythonX.Y/site-packages/onnxrl_sampler -> <prefix>
    site_prefix = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(_PKG_DIR))))
    for p in (site_prefix, sys.prefix, "/usr/local"):
        if p and p not in prefixes:
            prefixes.append(p)
    for p in prefixes:
        for libdir in ("lib", "lib64"):
            out.append((f"the install prefix {p}", os.path.join(p, libdir, LIBRARY_NAME)))
    out.append(("the system's library path", LIBRARY_NAME))
    return out


_runtime: ctypes.CDLL | None = None  # a preloaded ONNX Runtime, kept loaded


def _preload_runtime(lib_path: str) -> None:
    """Loads a source checkout's ONNX Runtime when nothing else names one (see the module doc)."""
    global _runtime
    if os.environ.get(ENV_RUNTIME) or not os.path.isabs(lib_path):
        return
    lib_dir = os.path.dirname(os.path.realpath(lib_path))
    if os.path.exists(os.path.join(lib_dir, "libonnxruntime.so.1")):
        return
    d = lib_dir
    while True:
        rt = os.path.join(d, "third_party", "onnxruntime", "lib", "libonnxruntime.so.1")
        if os.path.exists(rt):
            try:
                _runtime = ctypes.CDLL(rt, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                pass  # the library's own look-up reports what it tried
            return
        parent = os.path.dirname(d)
        if parent == d:
            return
        d = parent


def _load() -> ctypes.CDLL:
    tried = []
    for what, path in candidate_paths():
        if os.path.isabs(path) and not os.path.exists(path):
            tried.append(f"  {path} ({what}): no such file")
            continue
        try:
            _preload_runtime(path)
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"  {path} ({what}): {e}")
            continue
        _declare(lib)
        got = lib.onnxrl_abi_version()
        if got != ABI_VERSION:
            raise LibraryNotFoundError(
                f"onnxrl_sampler: {path} has ABI version {got}, this package needs {ABI_VERSION}: "
                "install the library and the package of the same release")
        return lib
    raise LibraryNotFoundError(
        f"onnxrl_sampler: could not load {LIBRARY_NAME}; looked in:\n" + "\n".join(tried) +
        f"\nBuild it with `make native` (build/lib/{LIBRARY_NAME}), install it with "
        f"`cmake --install build`, or name the file in ${ENV_LIBRARY}.")


def _declare(lib: ctypes.CDLL) -> None:
    """Sets the prototypes of include/onnxrl/sampler.h. Handles and buffers travel as void*."""
    i, p, i64, c = ctypes.c_int, ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p
    protos = {
        "onnxrl_abi_version": (i, []),
        "onnxrl_last_error": (c, []),
        "onnxrl_status_name": (c, [i]),
        "onnxrl_policy_open": (i, [c, c, p]),
        "onnxrl_policy_sizes": (i, [p, p, p]),
        "onnxrl_policy_act": (i, [p, p, i64, i, p, p, p]),
        "onnxrl_policy_close": (i, [p]),
        "onnxrl_env_open": (i, [c, c, p]),
        "onnxrl_env_sizes": (i, [p, p, p]),
        "onnxrl_episode_start": (i, [p, c, i, p, ctypes.c_size_t]),
        "onnxrl_episode_get_action": (i, [p, c, p, p]),
        "onnxrl_episode_get_actions": (i, [p, p, i64, p, p]),
        "onnxrl_episode_log_action": (i, [p, c, p, p]),
        "onnxrl_episode_log_returns": (i, [p, c, ctypes.c_double]),
        "onnxrl_episode_log_returns_batch": (i, [p, p, i64, p]),
        "onnxrl_episode_end": (i, [p, c, p]),
        "onnxrl_episode_end_truncated": (i, [p, c, p]),
        "onnxrl_env_close": (i, [p]),
    }
    for name, (res, args) in protos.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args


_lock = threading.Lock()
_lib: ctypes.CDLL | None = None


def lib() -> ctypes.CDLL:
    """The loaded library (loaded at the first call)."""
    global _lib
    if _lib is None:
        with _lock:
            if _lib is None:
                _lib = _load()
    return _lib


def raise_status(status: int) -> NoReturn:
    """Raises the exception for a failed call's status with this thread's message.

    Must be called on the thread that made the failed call, before its next call into the
    library (the message is the thread's last one).
    """
    lb = lib()
    msg = (lb.onnxrl_last_error() or b"").decode("utf-8", "replace")
    name = (lb.onnxrl_status_name(status) or b"").decode()
    cls = STATUS_ERRORS.get(status, SamplerError)
    raise cls(msg or name, status, name)


def library_version() -> str:
    """The loaded library's version (``onnxrl_version()``): its release, such as ``"0.1.0"``,
    then ``"+"`` and the commit it was built from when the build recorded one."""
    f = lib().onnxrl_version
    f.restype, f.argtypes = ctypes.c_char_p, []
    return f().decode()


def check(status: int) -> None:
    """Raises for a status other than ONNXRL_OK (0)."""
    if status:
        raise_status(status)
