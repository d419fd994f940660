#!/usr/bin/env bash
# Installs the ONNX Runtime shared library (1.24.1) under third_party/onnxruntime/ from the
# npm registry's onnxruntime-node package, checking pinned sha256 digests. Idempotent: does
# nothing when the library is already installed with the right digest, or when
# ONNXRUNTIME_SHARED_LIBRARY_PATH points at an existing file.
set -euo pipefail

VERSION=1.24.1
PACKAGE="onnxruntime-node@${VERSION}"
TARBALL_SHA256=57181cf6e6e711b155c5b942d591fd63ded0b5de5c4922d51fd994e7f6ac2772
X64_SHA256=53ef1ac028dd1b05554b8da28d9159eb3876f99868193d2aaa6e67f0243c23d4
ARM64_SHA256=7954e8bdedb497f830c6a679e818d98399b7f4d81ade1126c3e0be74d28111ab

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest="${root}/third_party/onnxruntime"
lib="${dest}/lib/libonnxruntime.so.1"

say() { echo "install-onnxruntime: $*" >&2; }
die() { say "error: $*"; exit 1; }

if [ -n "${ONNXRUNTIME_SHARED_LIBRARY_PATH:-}" ]; then
  if [ -f "${ONNXRUNTIME_SHARED_LIBRARY_PATH}" ]; then
    say "ONNXRUNTIME_SHARED_LIBRARY_PATH=${ONNXRUNTIME_SHARED_LIBRARY_PATH} exists; nothing to install"
    exit 0
  fi
  die "ONNXRUNTIME_SHARED_LIBRARY_PATH=${ONNXRUNTIME_SHARED_LIBRARY_PATH} does not exist; unset it to install ONNX Runtime ${VERSION} under ${dest}"
fi

case "$(uname -s)/$(uname -m)" in
  Linux/x86_64 | Linux/amd64) arch=x64; want=${X64_SHA256} ;;
  Linux/aarch64 | Linux/arm64) arch=arm64; want=${ARM64_SHA256} ;;
  *) die "no pinned ONNX Runtime build for $(uname -s)/$(uname -m); install ONNX Runtime ${VERSION} yourself and set ONNXRUNTIME_SHARED_LIBRARY_PATH to its shared library" ;;
esac

sha() { sha256sum "$1" | cut -d' ' -f1; }

if [ -f "${lib}" ] && [ "$(sha "${lib}")" = "${want}" ]; then
  say "ONNX Runtime ${VERSION} (linux/${arch}) already installed at ${lib}"
  exit 0
fi

command -v npm >/dev/null 2>&1 || die "npm is needed to fetch ${PACKAGE} from the npm registry (Debian: apt-get install npm)"
command -v sha256sum >/dev/null 2>&1 || die "sha256sum is needed (Debian: coreutils)"

tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT

say "fetching ${PACKAGE} from the npm registry"
# npm pack downloads the package tarball without running its install scripts.
(cd "${tmp}" && npm pack --silent "${PACKAGE}" >/dev/null) || die "npm pack ${PACKAGE} failed"
tarball="${tmp}/onnxruntime-node-${VERSION}.tgz"
[ -f "${tarball}" ] || die "npm pack did not produce ${tarball}"
got=$(sha "${tarball}")
[ "${got}" = "${TARBALL_SHA256}" ] || die "${PACKAGE} tarball sha256 is ${got}, want ${TARBALL_SHA256}"

member="package/bin/napi-v6/linux/${arch}/libonnxruntime.so.1"
tar -xzf "${tarball}" -C "${tmp}" "${member}" || die "${member} not found in ${PACKAGE}"
got=$(sha "${tmp}/${member}")
[ "${got}" = "${want}" ] || die "${member} sha256 is ${got}, want ${want}"

mkdir -p "${dest}/lib"
install -m 0644 "${tmp}/${member}" "${lib}.tmp"
mv -f "${lib}.tmp" "${lib}"
ln -sf libonnxruntime.so.1 "${dest}/lib/libonnxruntime.so"
echo "${VERSION}" >"${dest}/VERSION"
say "installed ONNX Runtime ${VERSION} (linux/${arch}) at ${lib}"
