"""onnxrl_sampler: the sampler from Python.

- :class:`Policy` - batch inference with an exported ONNX policy (NumPy in, NumPy out).
- :class:`Env` - RLlib's ExternalEnv episode API for simulators written in Python: many
  episodes (threads, or one vectorized simulator through :meth:`Env.get_actions`) ask for
  actions, one batched inference answers them, and the Go side records the training data.
- :class:`PolicyClient` - RLlib's PolicyClient against ``sample serve`` (standard library HTTP).
- :func:`make_vec` - the built-in environments (CartPole-v1, Pendulum-v1, ...) vectorized inside
  the library, with gymnasium's ``VectorEnv`` API (a subclass of it when gymnasium is installed).
- :class:`Sampler` - ``sample run`` from Python: built-in environments stepped with a policy inside
  the library, each sample batch handed over as NumPy views (or a pyarrow record) without a copy.
- :func:`export_policy` - exports a ``torch.nn.Module`` policy to ONNX with the names and policy
  spec the sampler resolves without guessing, and checks the export by running both.

Policy and Env load ``libonnxrl_sampler.so`` (the C API) through ctypes at their first use;
see :mod:`onnxrl_sampler._lib` for where it is looked for. PolicyClient needs no library.
"""

from .client import PolicyClient, PolicyServerError, ProtocolError
from .env import Env
from .errors import (ActionTimeoutError, DeviceError, InternalError, InvalidArgumentError, LibraryNotFoundError,
                     LimitError, ModelError, NotFoundError, OutputError, SamplerError, StateError)
from ._lib import library_version
from .export import ExportCheckError, export_policy
from .policy import Policy
from .sampler import Sampler
from .vector import VectorEnv, make_vec

__all__ = [
    "Policy", "Env", "PolicyClient", "export_policy", "make_vec", "VectorEnv", "Sampler", "library_version",
    "SamplerError", "InvalidArgumentError", "NotFoundError", "StateError", "ModelError", "LimitError",
    "ActionTimeoutError", "OutputError", "InternalError", "DeviceError", "LibraryNotFoundError",
    "PolicyServerError", "ProtocolError", "ExportCheckError",
]
