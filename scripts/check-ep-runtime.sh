#!/usr/bin/env bash
# Loads the native execution provider (build/lib/libonnxrl_ep.so, `make native`) into an ONNX
# Runtime release from the npm registry's onnxruntime-node package (default: the newest) and runs
# build/ep/test_ep_load against it: the version handshake, registration, its device, a bad
# option, and a model's outputs against the CPU provider.
#   scripts/check-ep-runtime.sh [VERSION]      (make check-ep-runtime)
# Nothing is installed: the package is unpacked into a temporary directory and removed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { echo "check-ep-runtime: $*" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || die "npm is needed (Debian: apt-get install npm)"
[ -x "${ROOT}/build/ep/test_ep_load" ] && [ -f "${ROOT}/build/lib/libonnxrl_ep.so" ] ||
    die "build the provider and its tests first: make native"
case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) die "no onnxruntime-node build for $(uname -m)" ;;
esac

version="${1:-$(npm view --silent onnxruntime-node version 2>/dev/null)}"
[ -n "${version}" ] || die "npm view onnxruntime-node version failed"
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
echo "check-ep-runtime: onnxruntime-node@${version}" >&2
(cd "${tmp}" && npm pack --silent "onnxruntime-node@${version}" >/dev/null) || die "npm pack onnxruntime-node@${version} failed"
member="package/bin/napi-v6/linux/${arch}/libonnxruntime.so.1"
tar -xzf "${tmp}/onnxruntime-node-${version}.tgz" -C "${tmp}" "${member}" ||
    die "onnxruntime-node@${version} has no ${member}"
exec "${ROOT}/build/ep/test_ep_load" "${tmp}/${member}" "${ROOT}/build/lib/libonnxrl_ep.so" "${ROOT}/models/cartpole_mlp.onnx"
