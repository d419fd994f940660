#!/usr/bin/env bash
# Builds, on the development machine, what scripts/device-check.sh needs on a GPU machine that
# has no Go toolchain, into .device/ (git-ignored, about 30 MiB): bin/sample (stripped), the
# inference package's test binary, the provider library and the pinned ONNX Runtime library,
# the two large ones xz-compressed. Then carry .device to the GPU machine with the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
step() { printf '[%s] %s\n' "$(date +%T)" "$*"; }
step "onnxruntime and the native build"
make -s onnxruntime native >/dev/null
rm -rf .device && mkdir -p .device
step "bin/sample (stripped)"
$GO build -ldflags "-s -w" -o .device/sample ./cmd/sample
step "the inference package's tests"
$GO test -c -ldflags "-s -w" -o .device/inference.test ./inference
cp build/lib/libonnxrl_ep.so .device/
cp third_party/onnxruntime/lib/libonnxruntime.so.1 .device/
step "compressing"
xz -T2 -6 .device/sample .device/libonnxruntime.so.1
du -sh .device
step "done: run scripts/device-check.sh on the GPU machine with .device carried"
