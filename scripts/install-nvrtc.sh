#!/usr/bin/env bash
# Installs NVRTC (CUDA 12.9's runtime compiler, libnvrtc.so.12 and its builtins) under
# third_party/nvrtc/ from PyPI's nvidia-cuda-nvrtc-cu12 wheel, checking a pinned sha256, for
# the CTest ep_cuda_compile: the CUDA backend's kernels compiled for sm_80, sm_90 and PTX
# without a GPU. Nothing is installed system-wide; pip's own cache keeps the wheel. Idempotent.
# The provider itself never needs this copy: on a GPU machine it finds the toolkit's or pip's
# NVRTC (ep/README.md).
set -euo pipefail

VERSION=12.9.86
WHEEL=nvidia_cuda_nvrtc_cu12-${VERSION}-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl
SHA256=210cf05005a447e29214e9ce50851e83fc5f4358df8b453155d5e1918094dcb4

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest="${root}/third_party/nvrtc"
lib="${dest}/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
say() { echo "install-nvrtc: $*" >&2; }

if [ -f "${lib}" ]; then
  say "NVRTC ${VERSION} already installed at ${lib}"
  exit 0
fi
case "$(uname -s)/$(uname -m)" in
  Linux/x86_64) ;;
  *) say "no pinned NVRTC wheel for $(uname -s)/$(uname -m): ep_cuda_compile will be skipped"; exit 0 ;;
esac
PY=${PYTHON_FOR_PIP:-python3}
if ! "$PY" -m pip --version >/dev/null 2>&1; then
  say "pip is missing: installing Debian's python3-pip"
  apt-get update && apt-get install -y --no-install-recommends python3-pip
  PY=/usr/bin/python3
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
say "downloading nvidia-cuda-nvrtc-cu12==${VERSION} from PyPI (about 90 MB)"
"$PY" -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux_2_12_x86_64 \
  --python-version 3 --implementation py -d "$tmp" "nvidia-cuda-nvrtc-cu12==${VERSION}"
got=$(sha256sum "$tmp/${WHEEL}" | cut -d' ' -f1)
[ "$got" = "$SHA256" ] || { say "error: ${WHEEL} has sha256 ${got}, want ${SHA256}"; exit 1; }
rm -rf "${dest}"
mkdir -p "${dest}"
"$PY" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$tmp/${WHEEL}" "${dest}"
[ -f "${lib}" ] || { say "error: ${lib} missing from the wheel"; exit 1; }
say "installed ${lib}"
