#!/usr/bin/env python3
"""Read the sampler's files with RLlib's own offline readers and check every column they load
against the sampler's reader.

    scripts/check_rllib.py [--sample BIN] [--dir DIR]

Runs `sample run` into JSON lines (CartPole-v1 with its bundled MLP and GAE; MultiAgentCartPole
with two policies; StatelessCartPole's LSTM with state_in per sequence, RLlib's layout) and Parquet (CartPole-v1, and a recurrent StatelessCartPole run), then reads:

- JSON lines with RLlib's JsonReader (ray.rllib.offline.json_reader: the old API stack's
  offline input, a SampleBatch or MultiAgentBatch per line);
- Parquet with ray.data.read_parquet (what the new API stack's OfflineData reads with
  input_read_method="read_parquet"), each row turned into a SingleAgentEpisode by
  OfflinePreLearner._map_to_episodes, as RLlib's offline training does;

and compares every column RLlib loads with the same file read by the sampler's own reader
(`sample convert FILE out.jsonl`: the Go reader, written back as JSON lines). RLlib's Parquet
path hands the infos column over as it is stored (JSON text, None for a row without one): the
script parses it before comparing. Prints a line per file and exits 1 at the first difference.

`make check-rllib` runs it with ray[rllib] from PyPI in the git-ignored .venv-rllib (not part of
`make test`: ray is large).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import types

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

try:
    import ray
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
    from ray.rllib.offline.json_reader import JsonReader
    from ray.rllib.offline.offline_prelearner import OfflinePreLearner
    from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
except ImportError as exc:  # pragma: no cover - depends on the machine
    print(f"check_rllib: ray[rllib] is not installed ({exc}); run `make check-rllib`", file=sys.stderr)
    sys.exit(2)

FLOATS = {"obs", "new_obs", "rewards", "action_dist_inputs", "action_logp", "vf_preds", "advantages",
          "value_targets"}


class Mismatch(Exception):
    pass


def run(sample: str, out: str, *args: str) -> None:
    subprocess.run([sample, "run", "--num-envs", "4", "--seed", "3", "--progress=false", "--out", out,
                    "--overwrite", *args], cwd=REPO, check=True, stdout=subprocess.DEVNULL)


def ours(sample: str, path: str, tmp: str) -> list[dict]:
    """The file's batches as the sampler's reader gives them: {policy: columns} per batch."""
    out = os.path.join(tmp, os.path.basename(path) + ".ours.jsonl")
    subprocess.run([sample, "convert", path, out, "--overwrite"], cwd=REPO, check=True,
                   stdout=subprocess.DEVNULL)
    batches = []
    with open(out) as f:
        for line in f:
            d = json.loads(line)
            if d.pop("type") == "SampleBatch":
                batches.append({"default_policy": d})
            else:
                batches.append(d["policy_batches"])
    return batches


def same(name: str, got, want, where: str) -> None:
    """Compares a column RLlib loaded with the sampler's: exactly, float32 columns as float32."""
    if name == "infos":
        if list(got) != list(want):
            raise Mismatch(f"{where}: column infos differs: {list(got)[:3]} vs {list(want)[:3]}")
        return
    if name == "agent_id" or name == "module_id":
        if [str(x) for x in got] != [str(x) for x in want]:
            raise Mismatch(f"{where}: column {name} differs")
        return
    if name in FLOATS or (name.startswith("state_") and name != "seq_lens"):
        g, w = np.asarray(got, dtype=np.float32), np.asarray(want, dtype=np.float32)
        ok = g.shape == w.shape and np.array_equal(g, w, equal_nan=True)
    else:
        g, w = np.asarray(got), np.asarray(want)
        ok = g.shape == w.shape and np.array_equal(g, w)
    if not ok:
        raise Mismatch(f"{where}: column {name} differs ({g.shape} vs {w.shape})")


def check_json(path: str, want: list[dict]) -> int:
    """JsonReader's batches against ours, column by column; returns the rows."""
    got = list(JsonReader(path).read_all_files())
    if len(got) != len(want):
        raise Mismatch(f"{path}: RLlib read {len(got)} batches, ours {len(want)}")
    rows = 0
    for i, (g, w) in enumerate(zip(got, want)):
        pbs = g.policy_batches if isinstance(g, MultiAgentBatch) else {"default_policy": g}
        if set(pbs) != set(w):
            raise Mismatch(f"{path} batch {i}: policies {sorted(pbs)} vs {sorted(w)}")
        for pid, sb in pbs.items():
            assert isinstance(sb, SampleBatch)
            cols = set(sb.keys())
            if cols != set(w[pid]):
                raise Mismatch(f"{path} batch {i} {pid}: RLlib loaded {sorted(cols)}, ours has {sorted(w[pid])}")
            for k in cols:
                same(k, sb[k], w[pid][k], f"{path} batch {i} {pid}")
            rows += len(sb)
    return rows


def check_parquet(path: str, want: list[dict]) -> int:
    """ray.data's rows, made into episodes by RLlib's OfflinePreLearner, against ours."""
    rows = ray.data.read_parquet(path).take_all()
    if not rows:
        raise Mismatch(f"{path}: no rows")
    batch = {k: [r[k] for r in rows] for k in rows[0]}
    config = AlgorithmConfig().offline_data(input_=[path], input_read_method="read_parquet")
    episodes = OfflinePreLearner._map_to_episodes(types.SimpleNamespace(config=config), batch)["episodes"]
    # Ours, row by row: the batches' policies in the order the file holds them.
    ref: dict[str, list] = {}
    for b in want:
        for pid in sorted(b):
            cols = b[pid]
            n = len(cols["obs"])
            seq = cols.get("seq_lens")
            for k, v in cols.items():
                if k == "seq_lens":  # the file's per-row form: the length on each sequence's first row
                    per = [0] * n
                    r = 0
                    for length in seq:
                        per[r] = length
                        r += length
                    v = per
                ref.setdefault(k, []).extend(v)
            ref.setdefault("module_id", []).extend([pid] * n)
    if len(episodes) != len(ref["obs"]):
        raise Mismatch(f"{path}: RLlib made {len(episodes)} episodes of {len(rows)} rows, ours has {len(ref['obs'])}")
    loaded = {"obs": [e.get_observations(0) for e in episodes],
              "new_obs": [e.get_observations(1) for e in episodes],
              "actions": [e.get_actions(0) for e in episodes],
              "rewards": [e.get_rewards(0) for e in episodes],
              "terminateds": [e.is_terminated for e in episodes],
              "truncateds": [e.is_truncated for e in episodes],
              "eps_id": [int(e.id_) for e in episodes],
              "infos": [json.loads(x) if x else {} for x in (e.get_infos(1) for e in episodes)]}
    extra = set(episodes[0].extra_model_outputs)
    for k in extra:
        loaded[k] = [e.get_extra_model_outputs(k, 0) for e in episodes]
    # What the schema maps and the rows still carry (not extra model outputs).
    for k in ("agent_id", "module_id", "t", "agent_index"):
        loaded.setdefault(k, batch[k])
    missing = set(ref) - set(loaded)
    if missing:
        raise Mismatch(f"{path}: RLlib did not load {sorted(missing)}")
    for k in sorted(ref):
        same(k, loaded[k], ref[k], path)
    return len(episodes)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", default=os.path.join(REPO, "bin", "sample"))
    ap.add_argument("--dir", default=None, help="keep the files here (default: a temporary folder)")
    a = ap.parse_args()
    tmp = a.dir or tempfile.mkdtemp(prefix="check_rllib.")
    os.makedirs(tmp, exist_ok=True)
    files = {
        "cartpole.jsonl": ("--env", "CartPole-v1", "--steps", "2000", "--gae"),
        "multiagent.jsonl": ("--env", "MultiAgentCartPole", "--env-config", "num_agents=4", "--steps", "1000",
                             "--policy", "a=cartpole_mlp", "--policy", "b=random",
                             "--policy-map", "agent_[02]=a", "--policy-map", "agent_*=b"),
        "lstm_per_sequence.jsonl": ("--env", "StatelessCartPole", "--steps", "1000", "--max-seq-len", "8",
                                    "--state-in", "per-sequence"),
        "cartpole.parquet": ("--env", "CartPole-v1", "--steps", "2000", "--gae"),
        "lstm.parquet": ("--env", "StatelessCartPole", "--steps", "1000", "--gae"),
    }
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    logging.getLogger("ray.data").setLevel(logging.WARNING)  # no progress lines per dataset
    try:
        for name, args in files.items():
            path = os.path.join(tmp, name)
            run(a.sample, path, *args)
            want = ours(a.sample, path, tmp)
            check = check_parquet if name.endswith(".parquet") else check_json
            n = check(path, want)
            print(f"check_rllib: {name}: ok, {n} rows read by RLlib {ray.__version__} equal the sampler's reader")
    except (Mismatch, subprocess.CalledProcessError) as exc:
        print(f"check_rllib: {exc}", file=sys.stderr)
        return 1
    finally:
        ray.shutdown()
        if a.dir is None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
