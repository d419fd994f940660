"""Exceptions raised by the package.

Every failed call of the C library raises a subclass of :class:`SamplerError` that carries the
library's status (``status``, ``status_name``) and its message. The subclasses also derive from
the built-in exception a Python caller would expect (``ValueError`` for bad arguments,
``LookupError`` for an unknown episode or model, ``TimeoutError``, ``OSError``), so that both
``except onnxrl_sampler.InvalidArgumentError`` and ``except ValueError`` work.
"""

from __future__ import annotations


class SamplerError(RuntimeError):
    """A call into libonnxrl_sampler failed.

    Attributes:
        status: the library's status code (a negative ``ONNXRL_ERR_*`` value).
        status_name: the constant's name, such as ``"ONNXRL_ERR_STATE"``.
    """

    def __init__(self, message: str, status: int = 0, status_name: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.status_name = status_name


class InvalidArgumentError(SamplerError, ValueError):
    """A bad argument: wrong size, bad options, a value outside its space."""


class NotFoundError(SamplerError, LookupError):
    """No such model file or bundled model, or an unknown episode."""


class StateError(SamplerError):
    """A closed handle, an episode that has ended or is running, a busy episode."""


class ModelError(SamplerError):
    """Not an ONNX model, an unusable policy (a recurrent one for Policy), a runtime failure."""


class DeviceError(ModelError):
    """The device asked for is not available here: no NVIDIA driver or GPU, no NVRTC, an ONNX
    Runtime without the CUDA provider, or no native provider library (``ONNXRL_ERR_DEVICE``).

    A subclass of :class:`ModelError`, which libraries before this status raised for it, so
    ``except ModelError`` still catches it.
    """


class LimitError(SamplerError):
    """Too many episodes, an id too long, a buffer too small."""


class ActionTimeoutError(SamplerError, TimeoutError):
    """No action within the environment's timeout."""


class OutputError(SamplerError, OSError):
    """The output file could not be written."""


class InternalError(SamplerError):
    """A bug of the library: please report the message."""


class LibraryNotFoundError(ImportError):
    """libonnxrl_sampler.so could not be loaded; the message lists every place tried."""


#: The library's status codes (include/onnxrl/sampler.h) and the exception each raises.
STATUS_ERRORS: dict[int, type[SamplerError]] = {
    -1: InvalidArgumentError,
    -2: NotFoundError,
    -3: StateError,
    -4: ModelError,
    -5: LimitError,
    -6: ActionTimeoutError,
    -7: OutputError,
    -8: InternalError,
    -9: DeviceError,
}
