"""export_policy: a torch.nn.Module policy to ONNX, with the names, dynamic batch axis and policy
spec (in the model's ``onnxrl.policy`` metadata) that the sampler resolves without guessing,
checked by running both the module and the exported model.

torch is imported when export_policy is called, so the rest of the package works without it.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import warnings
from typing import Any, Optional, Sequence

import numpy as np

#: The metadata key the sampler reads the policy spec from (models.MetadataKey).
METADATA_KEY = "onnxrl.policy"
#: The opset of the bundled models (models/export); the pinned ONNX Runtime runs it.
OPSET = 17

_ACTION_OUTPUT = {"categorical": "logits", "multi_categorical": "logits",
                  "diag_gaussian": "action_dist_inputs", "deterministic": "actions"}


class ExportCheckError(Exception):
    """The exported model does not compute what the module computes."""


def space_json(space: Any) -> dict[str, Any]:
    """A space as the sampler's spaces JSON (gymnasium's names and fields).

    Takes that JSON as a dict already, or a gymnasium-style space object (``Discrete``,
    ``MultiDiscrete``, ``MultiBinary``, ``Box``), recognised by its attributes.
    """
    if isinstance(space, dict):
        if "type" not in space:
            raise ValueError(f"space {space}: want a \"type\" (Box, Discrete, ...)")
        return space
    if hasattr(space, "nvec"):
        return {"type": "MultiDiscrete", "nvec": [int(v) for v in np.asarray(space.nvec).ravel()]}
    if hasattr(space, "n") and not hasattr(space, "low"):
        kind = type(space).__name__
        if kind == "MultiBinary":
            return {"type": "MultiBinary", "n": int(np.prod(space.n))}
        out: dict[str, Any] = {"type": "Discrete", "n": int(space.n)}
        if int(getattr(space, "start", 0)):
            out["start"] = int(space.start)
        return out
    if hasattr(space, "low") and hasattr(space, "high") and hasattr(space, "shape"):
        low = np.asarray(space.low, dtype=np.float32)
        high = np.asarray(space.high, dtype=np.float32)
        return {"type": "Box", "low": _floats(low), "high": _floats(high), "shape": list(space.shape),
                "dtype": "float32"}
    raise ValueError(f"space {space!r}: want a dict of the spaces JSON or a gymnasium Box, Discrete, "
                     "MultiDiscrete or MultiBinary")


def _floats(a: np.ndarray) -> list[float]:
    # float32 extremes as the shortest decimals that read back as the same float32; +-inf
    # cannot be written in JSON, so they become the float32 extremes (what gymnasium means).
    a = np.clip(a.ravel(), np.finfo(np.float32).min, np.finfo(np.float32).max)
    return [float(np.format_float_positional(v, unique=True, trim="-")) for v in a]


def _box_bounds(space: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    shape = tuple(int(d) for d in space["shape"])
    low = np.broadcast_to(np.asarray(space["low"], dtype=np.float64).reshape(-1) if np.ndim(space["low"]) else
                          np.float64(space["low"]), (int(np.prod(shape)),))
    high = np.broadcast_to(np.asarray(space["high"], dtype=np.float64).reshape(-1) if np.ndim(space["high"]) else
                           np.float64(space["high"]), (int(np.prod(shape)),))
    return low, high, shape


def default_distribution(action_space: dict[str, Any]) -> str:
    """The distribution for an action space: categorical (Discrete), multi_categorical
    (MultiDiscrete), diag_gaussian (Box)."""
    t = action_space["type"]
    if t == "Discrete":
        return "categorical"
    if t == "MultiDiscrete":
        return "multi_categorical"
    if t == "Box":
        return "diag_gaussian"
    raise ValueError(f"action space {t}: name the distribution (categorical, multi_categorical, "
                     "diag_gaussian, deterministic)")


def export_policy(module: Any, observation_space: Any, action_space: Any, path: str, *,
                  distribution: Optional[str] = None,
                  state_shapes: Sequence[Sequence[Optional[int]]] = (),
                  check: bool = True, check_steps: int = 4, check_batch: int = 4,
                  atol: float = 1e-4, rtol: float = 1e-4, opset: int = OPSET,
                  seed: int = 0) -> dict[str, Any]:
    """Exports a PyTorch policy to ONNX for the sampler and returns its policy spec.

    The module is called as ``module(obs, *states)`` with ``obs`` of shape
    ``(batch, *observation_shape)`` and returns ``action_out``, ``(action_out, value)``, or for a
    recurrent policy ``(action_out[, value], *new_states)``:

    - ``action_out`` (batch, k): the logits (categorical; all heads concatenated for
      multi_categorical), the mean and log_std halves (diag_gaussian), or the action
      (deterministic);
    - ``value`` (batch,): the value function (optional);
    - one new state per entry of ``state_shapes``, of the same shape as the state given.

    The ONNX graph gets the names ``obs``, ``state_in_<i>`` -> ``logits`` (``action_dist_inputs``
    for diag_gaussian, ``actions`` for deterministic), ``value``, ``state_out_<i>``; every batch
    axis is dynamic and named ``batch``; the policy spec is written into the model's metadata
    under ``onnxrl.policy``, so the file is all the sampler needs (``sample inspect`` shows it).

    Args:
        module: the ``torch.nn.Module`` (put in eval mode for the export).
        observation_space: a Box, as the spaces JSON dict or a gymnasium Box.
        action_space: the spaces JSON dict or a gymnasium space.
        path: where to write the ``.onnx`` file.
        distribution: ``categorical``, ``multi_categorical``, ``diag_gaussian`` or
            ``deterministic``; by default from the action space.
        state_shapes: the shape of each recurrent state tensor with ``None`` at its batch axis,
            e.g. ``[(1, None, 32), (1, None, 32)]`` for an ``nn.LSTM`` (h, c) of one layer.
        check: run the exported model with the sampler (an :class:`Env` greedy, recording
            ``check_steps`` steps of ``check_batch`` episodes with the states carried from
            zero, as the sampler does) and compare its outputs with the module's; raises
            :class:`ExportCheckError` when they differ beyond ``atol + rtol * |value|``. Needs
            libonnxrl_sampler.so.
        opset: the ONNX opset (17: what the bundled models use).
        seed: seed of the example and check inputs.

    Returns:
        The policy spec written into the model.
    """
    import torch  # only here: the rest of the package does not need torch

    obs_space = space_json(observation_space)
    act_space = space_json(action_space)
    if obs_space["type"] != "Box":
        raise ValueError(f"observation space {obs_space['type']}: export_policy takes a Box (one float32 tensor)")
    dist = distribution or default_distribution(act_space)
    if dist not in _ACTION_OUTPUT:
        raise ValueError(f"distribution {dist!r}: want one of {', '.join(_ACTION_OUTPUT)}")
    state_shapes = [tuple(s) for s in state_shapes]
    state_axes = []
    for i, s in enumerate(state_shapes):
        if sum(d is None for d in s) != 1:
            raise ValueError(f"state_shapes[{i}] {s}: want exactly one None (the batch axis)")
        state_axes.append(s.index(None))

    low, high, obs_shape = _box_bounds(obs_space)
    rng = np.random.default_rng(seed)

    def gen_obs(batch: int) -> np.ndarray:
        lo, hi = np.maximum(low, -1.0), np.minimum(high, 1.0)
        x = lo + (hi - lo) * rng.random((batch, lo.size))
        return x.astype(np.float32).reshape((batch,) + obs_shape)

    def gen_states(batch: int, zero: bool) -> list[np.ndarray]:
        out = []
        for s in state_shapes:
            shp = tuple(batch if d is None else d for d in s)
            out.append(np.zeros(shp, np.float32) if zero else rng.uniform(-1, 1, shp).astype(np.float32))
        return out

    module.eval()
    # Batch 3 for the example, not 1, so that no size-1 special case gets traced in.
    example = (torch.from_numpy(gen_obs(3)),) + tuple(torch.from_numpy(s) for s in gen_states(3, False))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = module(*example)
    res = res if isinstance(res, (tuple, list)) else (res,)
    n_heads = len(res) - len(state_shapes)
    if n_heads not in (1, 2):
        raise ValueError(f"the module returns {len(res)} tensors for {len(state_shapes)} states: want the "
                         "action output, optionally the value, then one new state per state input")
    if res[0].dim() != 2 or res[0].shape[0] != 3:
        raise ValueError(f"the action output has shape {tuple(res[0].shape)}: want (batch, k)")
    has_value = n_heads == 2
    if has_value and tuple(res[1].shape) != (3,):
        raise ValueError(f"the value output has shape {tuple(res[1].shape)}: want (batch,) (squeeze the last axis)")

    in_names = ["obs"] + [f"state_in_{i}" for i in range(len(state_shapes))]
    out_names = [_ACTION_OUTPUT[dist]] + (["value"] if has_value else []) + \
        [f"state_out_{i}" for i in range(len(state_shapes))]
    dynamic_axes = {"obs": {0: "batch"}, out_names[0]: {0: "batch"}}
    if has_value:
        dynamic_axes["value"] = {0: "batch"}
    for i, ax in enumerate(state_axes):
        dynamic_axes[f"state_in_{i}"] = {ax: "batch"}
        dynamic_axes[f"state_out_{i}"] = {ax: "batch"}
    spec: dict[str, Any] = {
        "observation_input": "obs",
        "action_output": out_names[0],
        "state": [{"input": f"state_in_{i}", "output": f"state_out_{i}"} for i in range(len(state_shapes))],
        "distribution": dist,
        "observation_space": obs_space,
        "action_space": act_space,
    }
    if has_value:
        spec["value_output"] = "value"

    buf = io.BytesIO()
    # The warnings of the exporter about RNNs and batch sizes do not apply: the states are
    # inputs and the batch axis is dynamic on purpose.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, example, buf, export_params=True, opset_version=opset,
                          do_constant_folding=True, input_names=in_names, output_names=out_names,
                          dynamic_axes=dynamic_axes)
    data = buf.getvalue() + _metadata_entry(METADATA_KEY, json.dumps(spec, separators=(",", ":")))
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)

    if check:
        _check(module, path, spec, gen_obs, gen_states, has_value, check_steps, check_batch, atol, rtol)
    return spec


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num: int, payload: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _metadata_entry(key: str, value: str) -> bytes:
    """One ModelProto.metadata_props entry (field 14, StringStringEntryProto key=1 value=2).

    A protobuf message may hold the fields of a repeated field anywhere, so appending the
    entry to the serialized model adds it without re-encoding the rest.
    """
    return _field(14, _field(1, key.encode()) + _field(2, value.encode()))


def _check(module: Any, path: str, spec: dict[str, Any], gen_obs: Any, gen_states: Any, has_value: bool,
           steps: int, batch: int, atol: float, rtol: float) -> None:
    """Runs the model through the sampler (Env, greedy, recording) and the module step by step
    on the same observations, and compares the recorded outputs with the module's."""
    import torch

    from .env import Env

    obs_steps = [gen_obs(batch) for _ in range(steps)]
    want: dict[bytes, tuple[np.ndarray, Optional[float]]] = {}
    states = [torch.from_numpy(s) for s in gen_states(batch, True)]
    with torch.no_grad():
        for obs in obs_steps:
            res = module(torch.from_numpy(obs), *states)
            res = res if isinstance(res, (tuple, list)) else (res,)
            n_heads = 2 if has_value else 1
            states = list(res[n_heads:])
            for r in range(batch):
                v = float(res[1][r]) if has_value else None
                want[obs[r].tobytes()] = (res[0][r].numpy().astype(np.float32), v)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "check.jsonl")
        with Env(path, out=out, max_episodes=batch, explore=False) as env:
            ids = [env.start_episode() for _ in range(batch)]
            for obs in obs_steps:
                env.get_actions(ids, obs.reshape(batch, -1))
            for i in ids:
                env.end_episode(i, obs_steps[-1][0].reshape(-1), truncated=True)
        rows = 0
        with open(out) as fh:
            for line in fh:
                b = json.loads(line)
                for i, o in enumerate(b["obs"]):
                    key = np.asarray(o, dtype=np.float32).reshape(-1).tobytes()
                    if key not in want:
                        continue
                    wa, wv = want.pop(key)
                    _close(f"{spec['action_output']} of step row {rows}", np.asarray(b["action_dist_inputs"][i],
                           np.float32).reshape(-1), wa.reshape(-1), atol, rtol)
                    if wv is not None:
                        _close(f"value of step row {rows}", np.float32(b["vf_preds"][i]), np.float32(wv), atol, rtol)
                    rows += 1
    if want:
        raise ExportCheckError(f"export check: {len(want)} of {steps * batch} steps were not recorded by the sampler")


def _close(what: str, got: np.ndarray, want: np.ndarray, atol: float, rtol: float) -> None:
    if got.shape != want.shape or not np.allclose(got, want, atol=atol, rtol=rtol):
        raise ExportCheckError(f"export check: {what}: ONNX Runtime gives {got.tolist()}, torch {want.tolist()}")
