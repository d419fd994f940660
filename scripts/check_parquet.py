#!/usr/bin/env python3
"""Check sample files written by `sample run --out x.parquet` with pyarrow.

    scripts/check_parquet.py [--rows N] FILE.parquet [FILE.parquet ...]

For each file: every page's CRC-32 is verified (pyarrow's page_checksum_verification: a
byte flipped in a page fails the read) and the sampler's checksums key is there; the columns RLlib's offline data API reads are there with the types the
sampler documents (vector columns fixed-size lists of float32, rewards float32, flags bool,
ids integers, module_id string), no column but infos has nulls (infos: each row's info as a
JSON object, null for a row without one), the optional columns have a row each,
and the key-value metadata says where the samples come from (spaces, sampler version, seed).
The row groups' row counts must add up to the rows read. With --rows N the files together
must hold N rows. Files named *.partial (left incomplete by a writer that was killed or
failed) are skipped, with a line that says so. Prints one line per file; exits 1 on the
first problem, 0 when all files pass.

Without pyarrow it prints why and exits 0 (skipped), so that it can run anywhere.
"""
import json
import sys

try:
    import pyarrow as pa
    import pyarrow.parquet as pq
except ImportError as exc:  # pragma: no cover - depends on the machine
    print(f"check_parquet: skipped: pyarrow is not installed ({exc})")
    sys.exit(0)

REQUIRED = {
    "obs": "vector",
    "new_obs": "vector",
    "actions": "actions",
    "rewards": pa.float32(),
    "terminateds": pa.bool_(),
    "truncateds": pa.bool_(),
    "eps_id": pa.int64(),
    "env_id": pa.int32(),
    "agent_id": pa.string(),
    "agent_index": pa.int32(),
    "module_id": pa.string(),
    "t": pa.int32(),
}
NULLABLE = {"infos"}
OPTIONAL = {
    "infos": pa.string(),  # files written before issue 36 have none
    "action_dist_inputs": "vector",
    "action_logp": pa.float32(),
    "vf_preds": pa.float32(),
    "seq_lens": pa.int32(),
    "advantages": pa.float32(),
    "value_targets": pa.float32(),
}
METADATA = ["onnxrl.sampler_version", "onnxrl.seed", "onnxrl.env_steps"]


def is_vector(t):
    """A row of float32 values: fixed-size (width >= 1) or, for width 0, a list of none."""
    if pa.types.is_fixed_size_list(t):
        return t.value_type == pa.float32()
    return pa.types.is_list(t) and t.value_type == pa.float32()


def check_type(name, want, t):
    if want == "vector":
        ok = is_vector(t)
    elif want == "actions":
        ok = t == pa.int64() or (
            pa.types.is_fixed_size_list(t) and t.value_type in (pa.int64(), pa.float32())
        ) or is_vector(t)
    else:
        ok = t == want
    if not ok:
        raise ValueError(f"column {name!r} is {t}, want {want}")


def check(path):
    f = pq.ParquetFile(path, page_checksum_verification=True)
    meta = {k.decode(): v.decode() for k, v in (f.metadata.metadata or {}).items()}
    for key in METADATA:
        if key not in meta:
            raise ValueError(f"metadata {key!r} is missing")
    steps = json.loads(meta["onnxrl.env_steps"])
    if len(steps) != f.num_row_groups:
        raise ValueError(f"onnxrl.env_steps has {len(steps)} values for {f.num_row_groups} row groups")
    table = f.read()
    groups = sum(f.metadata.row_group(g).num_rows for g in range(f.num_row_groups))
    if groups != table.num_rows or f.metadata.num_rows != table.num_rows:
        raise ValueError(f"row groups hold {groups} rows, the footer says {f.metadata.num_rows}, "
                         f"{table.num_rows} were read")
    if f.num_row_groups and "onnxrl.checksums" not in meta:
        raise ValueError("metadata 'onnxrl.checksums' is missing (pages without checksums)")
    schema = table.schema
    for name, want in REQUIRED.items():
        if name not in schema.names:
            raise ValueError(f"missing column {name!r}")
        check_type(name, want, schema.field(name).type)
    for name, want in OPTIONAL.items():
        if name in schema.names:
            check_type(name, want, schema.field(name).type)
    states = [n for n in schema.names if n.startswith("state_in_") or n.startswith("state_out_")]
    for name in states:
        check_type(name, "vector", schema.field(name).type)
    for name in schema.names:
        col = table.column(name)
        if col.null_count and name not in NULLABLE:
            raise ValueError(f"column {name!r} has {col.null_count} nulls")
    infos = table.column("infos").to_pylist() if "infos" in schema.names else []
    for i, info in enumerate(infos):
        if info is not None and not isinstance(json.loads(info), dict):
            raise ValueError(f"infos row {i} is not a JSON object: {info!r}")
    if states and sum(table.column("seq_lens").to_pylist()) != table.num_rows:
        raise ValueError("seq_lens do not add up to the rows")
    widths = {n: schema.field(n).type.list_size for n in schema.names
              if pa.types.is_fixed_size_list(schema.field(n).type)}
    print(f"{path}: ok, {table.num_rows} rows in {f.num_row_groups} row groups, "
          f"{len(schema.names)} columns, widths {widths}, policies "
          f"{sorted(set(table.column('module_id').to_pylist()))}, page checksums verified")
    return table.num_rows


def main(argv):
    args = argv[1:]
    want = None
    if len(args) >= 2 and args[0] == "--rows":
        want, args = int(args[1]), args[2:]
    if not args:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    rows = 0
    for path in args:
        if path.endswith(".partial"):
            print(f"{path}: skipped: an incomplete file (its writer did not finish it)")
            continue
        try:
            rows += check(path)
        except (ValueError, OSError, pa.ArrowException) as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            return 1
    if want is not None and rows != want:
        print(f"the files hold {rows} rows, want {want}", file=sys.stderr)
        return 1
    print(f"check_parquet: {rows} rows in all")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
