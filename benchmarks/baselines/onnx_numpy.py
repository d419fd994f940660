"""A minimal ONNX reader and evaluator in NumPy, for the reference sampler.

It reads the protobuf wire format by hand (no onnx package needed) and evaluates graphs made
of the few operators small policy networks exported from PyTorch use: Gemm, MatMul, Add, Sub,
Mul, Div, Tanh, Relu, Sigmoid, Identity, Constant, Reshape, Flatten, Squeeze, Unsqueeze,
Concat, Slice, Shape, Gather. Anything else raises NotImplementedError naming the operator.
"""

import struct

import numpy as np

# onnx.TensorProto.DataType -> NumPy dtype
_DTYPES = {1: np.float32, 6: np.int32, 7: np.int64, 9: np.bool_, 11: np.float64}


def _varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def _fields(buf):
    """Yields (field number, wire type, value) of one protobuf message."""
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            ln, i = _varint(buf, i)
            v, i = buf[i:i + ln], i + ln
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("unsupported protobuf wire type %d" % wt)
        yield num, wt, v


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _ints(wt, v):
    """A repeated int64 field's values: one varint, or a packed run."""
    if wt == 0:
        return [_signed(v)]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(_signed(x))
    return out


def _tensor(buf):
    dims, dtype, raw, floats, int64s, name = [], 1, None, [], [], ""
    for num, wt, v in _fields(buf):
        if num == 1:
            dims += _ints(wt, v)
        elif num == 2:
            dtype = v
        elif num == 4:
            floats += list(struct.unpack("<%df" % (len(v) // 4), v)) if wt == 2 else [struct.unpack("<f", v)[0]]
        elif num == 7:
            int64s += _ints(wt, v)
        elif num == 8:
            name = v.decode()
        elif num == 9:
            raw = bytes(v)
    if dtype not in _DTYPES:
        raise NotImplementedError("tensor %r: data type %d" % (name, dtype))
    dt = _DTYPES[dtype]
    if raw is not None:
        arr = np.frombuffer(raw, dtype=np.dtype(dt).newbyteorder("<")).astype(dt)
    elif floats:
        arr = np.array(floats, dtype=dt)
    else:
        arr = np.array(int64s, dtype=dt)
    return name, arr.reshape(dims)


def _attribute(buf):
    name, val = "", None
    ints, floats = [], []
    for num, wt, v in _fields(buf):
        if num == 1:
            name = v.decode()
        elif num == 2:
            val = struct.unpack("<f", v)[0]
        elif num == 3:
            val = _signed(v)
        elif num == 4:
            val = bytes(v).decode()
        elif num == 5:
            val = _tensor(v)[1]
        elif num == 7:
            floats += list(struct.unpack("<%df" % (len(v) // 4), v)) if wt == 2 else [struct.unpack("<f", v)[0]]
        elif num == 8:
            ints += _ints(wt, v)
    if val is None:
        val = ints if ints else floats
    return name, val


class Model:
    """An ONNX graph: inputs, outputs, initializers and nodes in topological order."""

    def __init__(self, data):
        graph = None
        for num, _, v in _fields(data):
            if num == 7:
                graph = v
        if graph is None:
            raise ValueError("not an ONNX model: no graph")
        self.nodes, self.init, self.inputs, self.outputs = [], {}, [], []
        for num, _, v in _fields(graph):
            if num == 1:
                node = {"inputs": [], "outputs": [], "op": "", "attrs": {}}
                for n2, _, v2 in _fields(v):
                    if n2 == 1:
                        node["inputs"].append(bytes(v2).decode())
                    elif n2 == 2:
                        node["outputs"].append(bytes(v2).decode())
                    elif n2 == 4:
                        node["op"] = bytes(v2).decode()
                    elif n2 == 5:
                        k, a = _attribute(v2)
                        node["attrs"][k] = a
                self.nodes.append(node)
            elif num == 5:
                k, arr = _tensor(v)
                self.init[k] = arr
            elif num in (11, 12):
                name = next(bytes(v2).decode() for n2, _, v2 in _fields(v) if n2 == 1)
                (self.inputs if num == 11 else self.outputs).append(name)
        self.inputs = [n for n in self.inputs if n not in self.init]
        for node in self.nodes:
            if node["op"] not in _OPS:
                raise NotImplementedError("operator %s is not supported by this evaluator" % node["op"])

    @classmethod
    def load(cls, path):
        with open(path, "rb") as f:
            return cls(f.read())

    def run(self, feeds):
        """Evaluates the graph on feeds (input name -> array); returns output name -> array."""
        vals = dict(self.init)
        vals.update(feeds)
        for node in self.nodes:
            args = [vals[n] if n else None for n in node["inputs"]]
            res = _OPS[node["op"]](args, node["attrs"])
            if not isinstance(res, tuple):
                res = (res,)
            for name, r in zip(node["outputs"], res):
                vals[name] = r
        return {n: vals[n] for n in self.outputs}


def _gemm(a, at):
    x, w = a[0], a[1]
    if at.get("transA", 0):
        x = x.T
    if at.get("transB", 0):
        w = w.T
    y = at.get("alpha", 1.0) * (x @ w)
    if len(a) > 2 and a[2] is not None:
        y = y + at.get("beta", 1.0) * a[2]
    return y.astype(np.float32, copy=False)


def _axes(a, at):
    if len(a) > 1 and a[1] is not None:
        return tuple(int(x) for x in a[1])
    ax = at.get("axes")
    return tuple(ax) if ax else None


def _squeeze(a, at):
    ax = _axes(a, at)
    return np.squeeze(a[0], axis=ax)


def _unsqueeze(a, at):
    out = a[0]
    for ax in sorted(_axes(a, at)):
        out = np.expand_dims(out, ax if ax >= 0 else ax + out.ndim + 1)
    return out


def _reshape(a, at):
    shape = [int(s) for s in a[1]]
    shape = [a[0].shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return a[0].reshape(shape)


def _slice(a, at):
    x = a[0]
    starts, ends = a[1], a[2]
    axes = a[3] if len(a) > 3 and a[3] is not None else range(len(starts))
    steps = a[4] if len(a) > 4 and a[4] is not None else [1] * len(starts)
    idx = [slice(None)] * x.ndim
    for s, e, ax, st in zip(starts, ends, axes, steps):
        idx[int(ax)] = slice(int(s), int(e), int(st))
    return x[tuple(idx)]


_OPS = {
    "Gemm": _gemm,
    "MatMul": lambda a, at: a[0] @ a[1],
    "Add": lambda a, at: a[0] + a[1],
    "Sub": lambda a, at: a[0] - a[1],
    "Mul": lambda a, at: a[0] * a[1],
    "Div": lambda a, at: a[0] / a[1],
    "Tanh": lambda a, at: np.tanh(a[0]),
    "Relu": lambda a, at: np.maximum(a[0], 0),
    "Sigmoid": lambda a, at: 1 / (1 + np.exp(-a[0])),
    "Identity": lambda a, at: a[0],
    "Constant": lambda a, at: at["value"],
    "Reshape": _reshape,
    "Flatten": lambda a, at: a[0].reshape(int(np.prod(a[0].shape[:at.get("axis", 1)])), -1),
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Concat": lambda a, at: np.concatenate(a, axis=at["axis"]),
    "Slice": _slice,
    "Shape": lambda a, at: np.array(a[0].shape, dtype=np.int64),
    "Gather": lambda a, at: np.take(a[0], a[1], axis=at.get("axis", 0)),
}
