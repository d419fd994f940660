"""Export the randomized test graphs of the native execution provider (inference/testdata/native).

Each graph is a small policy-shaped network with seeded random weights: MLPs with different
widths and activations, Gaussian heads, stacked LSTM and GRU with different state layouts and
sequence lengths, and the shape-moving operators (Concat, Split, Slice, Gather, Transpose,
Reshape, Flatten, Squeeze, Unsqueeze); a small Nature-CNN policy and a CNN of pools, padded,
dilated, grouped and depthwise convolutions; an MLP with LayerNorm and erf GELU and a LayerNorm
written out (ReduceMean, Pow, Sqrt); bidirectional LSTM and GRU. The Go tests run each through the provider and through
ONNX Runtime's CPU provider and compare (inference/native_test.go). The batch axis is dynamic
and named "batch".

Run with Debian's python3-torch: `bash models/export/run.sh --ep-graphs` (or `make ep-graphs`).
"""
import io
import os
import sys
import warnings

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "..", "..", "inference", "testdata", "native")
OPSET = 17


class MLP(nn.Module):
    """Widths and activations vary; categorical head with softmax/log-softmax and a value."""

    def __init__(self, obs, hidden, act, n_act):
        super().__init__()
        layers, prev = [], obs
        for h in hidden:
            layers += [nn.Linear(prev, h), act()]
            prev = h
        self.body = nn.Sequential(*layers)
        self.pi = nn.Linear(prev, n_act)
        self.vf = nn.Linear(prev, 1)

    def forward(self, obs):
        x = self.body(obs)
        logits = self.pi(x)
        return logits, torch.softmax(logits, -1), torch.log_softmax(logits, -1), self.vf(x).squeeze(-1)


class Gaussian(nn.Module):
    """Mean and a clamped, state-independent log_std, exp'ed: Clip, Exp, Concat, Mul, Sub."""

    def __init__(self, obs, hidden, act_dim):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs, hidden), nn.Sigmoid(), nn.Linear(hidden, hidden), nn.Tanh())
        self.mean = nn.Linear(hidden, act_dim)
        self.log_std = nn.Parameter(torch.randn(act_dim) * 0.3)
        self.vf = nn.Linear(hidden, 1)

    def forward(self, obs):
        x = self.body(obs)
        mean = torch.clamp(self.mean(x), -2.0, 2.0)
        log_std = self.log_std + torch.zeros_like(mean)
        std = torch.exp(log_std)
        scaled = (mean - 0.5) / (std + 1.0) * 2.0
        return torch.cat([mean, log_std], dim=-1), scaled, torch.log(std + 1.0), self.vf(x).squeeze(-1)


class Shapes(nn.Module):
    """The data-movement operators around a MatMul."""

    def __init__(self, obs):
        super().__init__()
        self.lin = nn.Linear(obs, 12)
        self.lin2 = nn.Linear(6, 4, bias=False)

    def forward(self, obs):
        x = torch.relu(self.lin(obs))            # [b,12]
        a, b = torch.split(x, [6, 6], dim=1)      # Split
        y = self.lin2(a * b)                      # Mul, MatMul without bias
        z = x.reshape(-1, 3, 4).transpose(1, 2)   # Reshape, Transpose -> [b,4,3]
        first = z[:, :, 0]                        # Gather
        mid = z[:, 1:3, :].flatten(1)             # Slice, Flatten -> [b,6]
        w = torch.nn.functional.leaky_relu(first.unsqueeze(1), 0.2).squeeze(1)  # Unsqueeze, Squeeze
        return torch.cat([y, w], dim=1), (mid - 0.25) * mid + mid / 3.0


class Recurrent(nn.Module):
    """A stacked LSTM or GRU policy. Sequence-first state [layers, batch, hidden]; the input is
    one step [batch, obs] (unsqueezed) or a batch-first sequence [batch, seq, obs]."""

    def __init__(self, kind, obs, hidden, layers, seq):
        super().__init__()
        self.kind, self.seq = kind, seq
        self.features = nn.Sequential(nn.Linear(obs, hidden), nn.Tanh())
        cls = nn.LSTM if kind == "lstm" else nn.GRU
        self.rnn = cls(hidden, hidden, num_layers=layers, batch_first=seq > 1)
        self.pi = nn.Linear(hidden, 3)
        self.vf = nn.Linear(hidden, 1)

    def forward(self, obs, *state):
        x = self.features(obs)
        if self.seq == 1:
            x = x.unsqueeze(0)
        st = (state[0], state[1]) if self.kind == "lstm" else state[0]
        y, st = self.rnn(x, st)
        last = y[0] if self.seq == 1 else y[:, -1]
        outs = (self.pi(last), self.vf(last).squeeze(-1))
        return outs + (tuple(st) if self.kind == "lstm" else (st,))


class BatchMajorState(nn.Module):
    """A stacked GRU or LSTM whose state tensors are batch-major [batch, layers, hidden] at the
    interface (transposed to the runtime's [layers, batch, hidden] and back inside)."""

    def __init__(self, kind, obs, hidden, layers):
        super().__init__()
        self.inner = Recurrent(kind, obs, hidden, layers, 1)
        self.kind = kind

    def forward(self, obs, *state):
        st = tuple(s.transpose(0, 1).contiguous() for s in state)
        outs = self.inner(obs, *st)
        return outs[:2] + tuple(s.transpose(0, 1) for s in outs[2:])


class NatureCNN(nn.Module):
    """A small Nature-CNN policy: three strided convolutions with ReLU, Flatten, Linear, heads."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(4, 8, 8, stride=4), nn.ReLU(), nn.Conv2d(8, 16, 4, stride=2), nn.ReLU(),
                                  nn.Conv2d(16, 16, 3, stride=1), nn.ReLU(), nn.Flatten())
        self.fc = nn.Sequential(nn.Linear(16 * 1 * 1, 32), nn.ReLU())
        self.pi = nn.Linear(32, 5)
        self.vf = nn.Linear(32, 1)

    def forward(self, obs):
        x = self.fc(self.conv(obs))
        return self.pi(x), self.vf(x).squeeze(-1)


class PoolCNN(nn.Module):
    """Convolutions with padding, dilation, groups (a depthwise one) and bias-free, then MaxPool
    and AveragePool with and without ceil_mode, padding and count_include_pad."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 6, 3, stride=1, padding=1)
        self.dw = nn.Conv2d(6, 6, 3, stride=2, padding=(1, 2), dilation=(1, 2), groups=6)
        self.gc = nn.Conv2d(6, 4, (2, 3), stride=(1, 2), padding=(0, 1), groups=2, bias=False)
        self.pw = nn.Conv2d(4, 5, 1)
        self.fc = nn.Linear(5 * 2 * 2 + 5 * 2 * 2 + 4 * 2 * 2 + 4 * 2 * 2, 3)

    def forward(self, obs):
        x = torch.relu(self.c1(obs))                                         # [b,6,11,13]
        x = torch.nn.functional.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True)  # [b,6,6,7]
        x = torch.tanh(self.dw(x))                                           # [b,6,3,4]
        g = self.gc(x)                                                       # [b,4,2,2]
        p = self.pw(g)                                                       # [b,5,2,2]
        a = torch.nn.functional.avg_pool2d(p, 2, stride=1, padding=1, ceil_mode=False, count_include_pad=True)
        m = torch.nn.functional.max_pool2d(p, (2, 2), stride=2, dilation=1, ceil_mode=True)  # [b,5,1,1]
        v = torch.nn.functional.avg_pool2d(g, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
        w = torch.nn.functional.avg_pool2d(g, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=True)
        a = torch.nn.functional.avg_pool2d(a, 2, stride=1)                   # [b,5,2,2]
        feats = torch.cat([a.flatten(1), (m + p).flatten(1), v.flatten(1), w.flatten(1)], dim=1)
        return self.fc(feats), m.flatten(1), v.flatten(1) - w.flatten(1)


class LayerNormMLP(nn.Module):
    """An MLP with LayerNorm and exact (erf) GELU: LayerNormalization, Erf, Div, Mul, Add; the
    second LayerNorm normalizes the last two axes of a [batch, 4, hidden/4] view (axis=-2)."""

    def __init__(self, obs, hidden):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs, hidden), nn.LayerNorm(hidden), nn.GELU(), nn.Linear(hidden, hidden))
        self.quarter = hidden // 4
        self.norm2 = nn.LayerNorm([4, self.quarter])
        with torch.no_grad():
            self.norm2.weight.uniform_(0.5, 1.5)
            self.norm2.bias.uniform_(-0.5, 0.5)
        self.pi = nn.Linear(hidden, 4)
        self.vf = nn.Linear(hidden, 1)

    def forward(self, obs):
        x = self.body(obs)
        x = nn.functional.gelu(self.norm2(x.reshape(-1, 4, self.quarter))).flatten(1)
        return self.pi(x), self.vf(x).squeeze(-1)


class DecomposedLayerNorm(nn.Module):
    """LayerNorm written out as older exporters do: ReduceMean, Sub, Pow, Sqrt, Div, and a Pow
    with another exponent, a ReduceMean over two axes without keepdims."""

    def __init__(self, obs, hidden):
        super().__init__()
        self.lin = nn.Linear(obs, hidden)
        self.gain = nn.Parameter(torch.rand(hidden) + 0.5)
        self.out = nn.Linear(hidden, 3)

    def forward(self, obs):
        x = self.lin(obs)
        m = x.mean(-1, keepdim=True)
        v = (x - m).pow(2).mean(-1, keepdim=True)
        y = (x - m) / torch.sqrt(v + 1e-5) * self.gain
        z = x * x + 1.0
        grid = y.reshape(-1, 2, self.gain.shape[0] // 2)
        return self.out(y), grid.mean(dim=(1, 2)), z.pow(0.5) + z.pow(1.7) + z.pow(-1.0)


class BiRNN(nn.Module):
    """A bidirectional LSTM or GRU (one layer or two stacked) over a batch-first sequence, its
    state [2 * layers, batch, hidden]. (PyTorch writes no direction=reverse node; the host tests
    of ep/tests/ops_test.cc cover that one.)"""

    def __init__(self, kind, obs, hidden, layers, seq):
        super().__init__()
        self.kind = kind
        cls = nn.LSTM if kind == "lstm" else nn.GRU
        self.rnn = cls(obs, hidden, num_layers=layers, batch_first=True, bidirectional=True)
        self.pi = nn.Linear(2 * hidden, 3)

    def forward(self, obs, *state):
        st = (state[0], state[1]) if self.kind == "lstm" else state[0]
        y, st = self.rnn(obs, st)
        outs = (self.pi(y[:, -1]), self.pi(y[:, 0]))
        return outs + (tuple(st) if self.kind == "lstm" else (st,))


def graphs():
    out = []
    for i, (hidden, act) in enumerate([((16,), nn.ReLU), ((64, 64), nn.Tanh), ((33, 7, 20), nn.Sigmoid),
                                       ((128,), nn.LeakyReLU)]):
        out.append(("mlp_%d" % i, 100 + i, lambda h=hidden, a=act, i=i: MLP(5 + i, h, a, 2 + i),
                    [("obs", [None, 5 + i])], ["logits", "probs", "logp", "value"]))
    out.append(("gaussian", 200, lambda: Gaussian(3, 32, 2), [("obs", [None, 3])], ["dist", "scaled", "logstd", "value"]))
    out.append(("shapes", 300, lambda: Shapes(8), [("obs", [None, 8])], ["a", "b"]))
    for kind in ("lstm", "gru"):
        for j, (hidden, layers, seq) in enumerate([(16, 1, 1), (24, 2, 1), (8, 2, 4)]):
            obs_shape = [None, 4] if seq == 1 else [None, seq, 4]
            states = [("h_in", [layers, None, hidden])]
            souts = ["h_out"]
            if kind == "lstm":
                states.append(("c_in", [layers, None, hidden]))
                souts.append("c_out")
            out.append(("%s_%d" % (kind, j), 400 + j + (10 if kind == "gru" else 0),
                        lambda k=kind, h=hidden, l=layers, s=seq: Recurrent(k, 4, h, l, s),
                        [("obs", obs_shape)] + states, ["logits", "value"] + souts))
    for kind in ("lstm", "gru"):
        states = [("h_in", [None, 2, 12])] + ([("c_in", [None, 2, 12])] if kind == "lstm" else [])
        souts = ["h_out"] + (["c_out"] if kind == "lstm" else [])
        out.append(("%s_batch_major_state" % kind, 500 + (1 if kind == "gru" else 0),
                    lambda k=kind: BatchMajorState(k, 4, 12, 2), [("obs", [None, 4])] + states,
                    ["logits", "value"] + souts))
    out.append(("cnn_nature", 600, NatureCNN, [("obs", [None, 4, 36, 36])], ["logits", "value"]))
    out.append(("cnn_pools", 601, PoolCNN, [("obs", [None, 3, 11, 13])], ["logits", "max", "avg"]))
    out.append(("layernorm_mlp", 610, lambda: LayerNormMLP(6, 24), [("obs", [None, 6])], ["logits", "value"]))
    out.append(("layernorm_decomposed", 611, lambda: DecomposedLayerNorm(5, 16), [("obs", [None, 5])],
                ["logits", "grid_mean", "powers"]))
    for kind in ("lstm", "gru"):
        for j, (hidden, layers, seq) in enumerate([(8, 1, 3), (6, 2, 2)]):
            states = [("h_in", [2 * layers, None, hidden])]
            souts = ["h_out"]
            if kind == "lstm":
                states.append(("c_in", [2 * layers, None, hidden]))
                souts.append("c_out")
            out.append(("%s_bidirectional_%d" % (kind, j), 620 + j + (10 if kind == "gru" else 0),
                        lambda k=kind, h=hidden, l=layers, s=seq: BiRNN(k, 4, h, l, s),
                        [("obs", [None, seq, 4])] + states, ["last", "first"] + souts))
    return out


def export(name, seed, make, inputs, outputs, out_dir=OUT_DIR):
    """Export make()'s module (seeded weights) to out_dir/name.onnx: inputs are (name, shape)
    pairs with None for the dynamic batch axis. benchmarks/epbench/export.py uses it too."""
    torch.manual_seed(seed)
    model = make().eval()
    gen = torch.Generator().manual_seed(seed)
    example = tuple(torch.rand([3 if d is None else d for d in shape], generator=gen) * 2 - 1 for _, shape in inputs)
    dynamic = {n: {shape.index(None): "batch"} for n, shape in inputs}
    buf = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, example, buf, export_params=True, opset_version=OPSET, do_constant_folding=True,
                          input_names=[n for n, _ in inputs], output_names=outputs, dynamic_axes=dynamic)
    path = os.path.join(out_dir, name + ".onnx")
    with open(path, "wb") as fh:
        fh.write(buf.getvalue())
    print("wrote %s (%d bytes)" % (os.path.relpath(path), len(buf.getvalue())))


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    want = set(sys.argv[1:])
    for g in graphs():
        if not want or g[0] in want:
            export(*g)


if __name__ == "__main__":
    main()
