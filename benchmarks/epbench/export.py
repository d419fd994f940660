"""Export the six policies `epbench` measures (benchmarks/epbench/models/<name>.onnx).

Seeded random weights (the speed of a policy does not depend on its training), batch axis
dynamic and named "batch", torch's TorchScript exporter at opset 17, as users export them:

  mlp_8_64_64_tanh      obs [b,8]  -> 64 -> 64 (tanh) -> logits [b,4], value [b]
  mlp_64_256_256_relu   obs [b,64] -> 256 -> 256 (ReLU) -> logits [b,16], value [b]
  lstm_128              obs [b,16] -> Linear 128 + tanh -> one LSTM step (h, c [1,b,128]) -> heads
  gru_64                obs [b,16] -> Linear 64 + tanh -> one GRU step (h [1,b,64]) -> heads
  nature_cnn            obs [b,4,84,84] -> Conv 32x8x8/4, 64x4x4/2, 64x3x3/1 (ReLU) -> 512 -> heads
  mlp_layernorm_gelu    obs [b,32] -> (Linear 128, LayerNorm, GELU) x 2 -> logits [b,8], value [b]

The Nature CNN (6.8 MB) is not committed: `make bench-ep` exports it when missing. Run with
Debian's python3-torch: /usr/bin/python3 benchmarks/epbench/export.py [name ...]
"""
import os
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "models", "export"))
from export_ep_graphs import export  # noqa: E402  (the same exporter as the parity graphs)

OUT_DIR = os.path.join(HERE, "models")


class MLP(nn.Module):
    def __init__(self, obs, hidden, act, n_act, norm=False):
        super().__init__()
        layers, prev = [], obs
        for h in hidden:
            layers.append(nn.Linear(prev, h))
            if norm:
                layers.append(nn.LayerNorm(h))
            layers.append(act())
            prev = h
        self.body = nn.Sequential(*layers)
        self.pi = nn.Linear(prev, n_act)
        self.vf = nn.Linear(prev, 1)

    def forward(self, obs):
        x = self.body(obs)
        return self.pi(x), self.vf(x).squeeze(-1)


class Recurrent(nn.Module):
    def __init__(self, cell, obs, hidden, n_act):
        super().__init__()
        self.enc = nn.Linear(obs, hidden)
        self.rnn = cell(hidden, hidden)
        self.pi = nn.Linear(hidden, n_act)
        self.vf = nn.Linear(hidden, 1)

    def forward(self, obs, *state):
        x = torch.tanh(self.enc(obs)).unsqueeze(0)
        y, out = self.rnn(x, state if len(state) == 2 else state[0])
        y = y.squeeze(0)
        out = out if isinstance(out, tuple) else (out,)
        return (self.pi(y), self.vf(y).squeeze(-1)) + out


class NatureCNN(nn.Module):
    def __init__(self, n_act):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(4, 32, 8, stride=4), nn.ReLU(),
            nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
            nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(),
            nn.Flatten(), nn.Linear(3136, 512), nn.ReLU())
        self.pi = nn.Linear(512, n_act)
        self.vf = nn.Linear(512, 1)

    def forward(self, obs):
        x = self.body(obs)
        return self.pi(x), self.vf(x).squeeze(-1)


def models():
    # name, constructor, inputs (name, shape with None for the batch axis), outputs
    return [
        ("mlp_8_64_64_tanh", lambda: MLP(8, [64, 64], nn.Tanh, 4), [("obs", [None, 8])], ["logits", "value"]),
        ("mlp_64_256_256_relu", lambda: MLP(64, [256, 256], nn.ReLU, 16), [("obs", [None, 64])], ["logits", "value"]),
        ("lstm_128", lambda: Recurrent(nn.LSTM, 16, 128, 4),
         [("obs", [None, 16]), ("state_in_0", [1, None, 128]), ("state_in_1", [1, None, 128])],
         ["logits", "value", "state_out_0", "state_out_1"]),
        ("gru_64", lambda: Recurrent(nn.GRU, 16, 64, 4), [("obs", [None, 16]), ("state_in_0", [1, None, 64])],
         ["logits", "value", "state_out_0"]),
        ("nature_cnn", lambda: NatureCNN(6), [("obs", [None, 4, 84, 84])], ["logits", "value"]),
        ("mlp_layernorm_gelu", lambda: MLP(32, [128, 128], nn.GELU, 8, norm=True), [("obs", [None, 32])],
         ["logits", "value"]),
    ]


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    want = set(sys.argv[1:])
    names = [m[0] for m in models()]
    unknown = want - set(names)
    if unknown:
        sys.exit("export.py: unknown model(s) %s; known: %s" % (", ".join(sorted(unknown)), ", ".join(names)))
    for name, make, inputs, outputs in models():
        if not want or name in want:
            export(name, 1, make, inputs, outputs, out_dir=OUT_DIR)


if __name__ == "__main__":
    main()
