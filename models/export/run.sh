#!/usr/bin/env bash
# Regenerate the bundled test policies (models/*.onnx, *.policy.json, *.case.json).
# Needs Debian's python3-torch (served by /usr/bin/python3); installs it when missing.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY=/usr/bin/python3

if ! "$PY" -c 'import torch' >/dev/null 2>&1; then
    echo "run.sh: torch not importable by $PY; installing python3-torch" >&2
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            SUDO=sudo
        else
            echo "run.sh: not root and no sudo; install python3-torch by hand" >&2
            exit 1
        fi
    fi
    $SUDO apt-get update
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y python3-torch
fi

# --epbench: the six policies of the provider's benchmark (benchmarks/epbench/export.py).
if [ "${1:-}" = "--epbench" ]; then
    shift
    exec "$PY" "$HERE/../../benchmarks/epbench/export.py" "$@"
fi
# --ep-graphs: the native provider's randomized test graphs instead (export_ep_graphs.py).
if [ "${1:-}" = "--ep-graphs" ]; then
    shift
    exec "$PY" "$HERE/export_ep_graphs.py" "$@"
fi
exec "$PY" "$HERE/export_models.py" "$@"
