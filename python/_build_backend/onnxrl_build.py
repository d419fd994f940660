"""The PEP 517 build backend of the onnxrl_sampler package (standard library only).

A wheel carries the native code beside the Python modules, in ``onnxrl_sampler/``:

- ``libonnxrl_sampler.so`` (the C API) and ``libonnxrl_ep.so`` (the execution provider), taken from
  a CMake build folder of the source checkout: ``build`` under the project root, or the folder named
  by the config setting ``build-dir`` (``pip wheel -C build-dir=...``) or by ``ONNXRL_BUILD_DIR``;
  stripped of debug information when ``strip`` is on the path;
- ``libonnxruntime.so.1``, the pinned ONNX Runtime as ``make onnxruntime`` installs it under
  ``third_party/onnxruntime/lib``, checked against the sha256 digests of
  ``scripts/install-onnxruntime.sh``; its license is in the dist-info (``ONNXRUNTIME-LICENSE``),
  beside the project's.

The package loads the library from its own folder first, and the library looks beside itself for
ONNX Runtime and the provider before anywhere but ``ONNXRUNTIME_SHARED_LIBRARY_PATH`` and
``ONNXRL_EP_LIBRARY`` (inference.AlsoLookIn), so an installed wheel needs no variable.

pip does not build the native code: that needs Go, CMake and a C++ compiler and takes minutes.
When the libraries are missing, the build fails and says to run ``make wheel`` (or ``make native``)
first. The wheel is reproducible: entries sorted, fixed timestamps (``SOURCE_DATE_EPOCH`` or
1980-01-01) and permissions, so the same inputs give the same bytes.

The platform tag is ``manylinux_2_X`` when the ELF version needs of all three libraries fit the
oldest policy of ``MANYLINUX`` (numbers from auditwheel 6.8.2's manylinux-policy.json, x86_64),
``linux_<arch>`` otherwise.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import os
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(PYTHON_DIR)
PACKAGE = "onnxrl_sampler"
NATIVE = ("libonnxrl_sampler.so", "libonnxrl_ep.so")
RUNTIME = "third_party/onnxruntime/lib/libonnxruntime.so.1"
RUNTIME_SCRIPT = "scripts/install-onnxruntime.sh"

#: manylinux policies, oldest first: the newest version allowed per version prefix, and the
#: libraries a wheel may need from the system (plus the dynamic loader).
MANYLINUX = [
    (name, {"GLIBC": glibc, "GLIBCXX": glibcxx, "CXXABI": cxxabi, "GCC": gcc})
    for name, glibc, glibcxx, cxxabi, gcc in [
        ("manylinux_2_28", "2.28", "3.4.24", "1.3.11", "7.0.0"),
        ("manylinux_2_31", "2.31", "3.4.28", "1.3.12", "7.0.0"),
        ("manylinux_2_34", "2.34", "3.4.29", "1.3.13", "7.0.0"),
        ("manylinux_2_35", "2.35", "3.4.30", "1.3.13", "12.0.0"),
    ]
]
MANYLINUX_LIBS = {"libgcc_s.so.1", "libstdc++.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libc.so.6",
                  "libpthread.so.0", "ld-linux-x86-64.so.2"}
MANYLINUX_NAMED = {"CXXABI_TM_1", "CXXABI_FLOAT128"}  # allowed version names that are not numbers


class NativeLibrariesMissing(RuntimeError):
    """The native libraries a wheel carries are not built."""


# ---- the hooks ------------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return ["tomli>=1.1"] if sys.version_info < (3, 11) else []


get_requires_for_build_sdist = get_requires_for_build_wheel
get_requires_for_build_editable = get_requires_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """Builds the wheel with the native libraries (see the module doc) into wheel_directory."""
    project = _project()
    with tempfile.TemporaryDirectory() as tmp:
        natives = native_files(_build_dir(config_settings), tmp)
        tag = "py3-none-" + platform_tag([p for _, p in natives])
        files = [(f"{PACKAGE}/{name}", _read(os.path.join(PYTHON_DIR, PACKAGE, name)), 0o644)
                 for name in _modules()]
        files += [(f"{PACKAGE}/{name}", _read(path), 0o755) for name, path in natives]
        notice = _read(os.path.join(PYTHON_DIR, "_build_backend", "ONNXRUNTIME-LICENSE"))
        return _write_wheel(wheel_directory, project, tag, files, [("ONNXRUNTIME-LICENSE", notice)])


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    """The dist-info with METADATA alone, so that pip need not build the wheel twice."""
    project = _project()
    info = f"{_dist_name(project)}-{project['version']}.dist-info"
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "wb") as f:
        f.write(_metadata(project))
    return info


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """An editable install: a .pth file putting python/ on sys.path (the package then finds the
    libraries in the source tree's build/lib, as it does there)."""
    files = [(f"{PACKAGE}_editable.pth", (PYTHON_DIR + "\n").encode(), 0o644)]
    return _write_wheel(wheel_directory, _project(), "py3-none-any", files)


def build_sdist(sdist_directory, config_settings=None):
    """The Python sources and this backend; a wheel built from it needs ONNXRL_BUILD_DIR (or
    build-dir) and the runtime of a source checkout, so it is of little use beyond archiving."""
    project = _project()
    base = f"{_dist_name(project)}-{project['version']}"
    members = [("pyproject.toml", _read(os.path.join(PYTHON_DIR, "pyproject.toml")))]
    backend = os.path.join(PYTHON_DIR, "_build_backend")
    members += [(f"_build_backend/{n}", _read(os.path.join(backend, n)))
                for n in sorted(os.listdir(backend)) if os.path.isfile(os.path.join(backend, n))]
    members += [(f"{PACKAGE}/{n}", _read(os.path.join(PYTHON_DIR, PACKAGE, n))) for n in _modules()]
    members.append(("PKG-INFO", _metadata(project)))
    path = os.path.join(sdist_directory, base + ".tar.gz")
    mtime = _epoch()
    with open(path, "wb") as raw, gzip.GzipFile("", "wb", fileobj=raw, mtime=mtime) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in sorted(members):
            info = tarfile.TarInfo(f"{base}/{name}")
            info.size, info.mtime, info.mode = len(data), mtime, 0o644
            tar.addfile(info, io.BytesIO(data))
    return os.path.basename(path)


# ---- the native libraries -------------------------------------------------------------------

def _build_dir(config_settings) -> str:
    d = (config_settings or {}).get("build-dir") or os.environ.get("ONNXRL_BUILD_DIR") or "build"
    return os.path.join(REPO, d)  # an absolute d stays as it is


def native_files(build_dir: str, tmp: str) -> list[tuple[str, str]]:
    """The (name in the package, file) pairs a wheel carries; ours stripped into tmp."""
    missing = [p for p in [os.path.join(build_dir, "lib", n) for n in NATIVE] + [os.path.join(REPO, RUNTIME)]
               if not os.path.isfile(p)]
    if missing:
        raise NativeLibrariesMissing(
            "onnxrl_sampler: a wheel carries the native libraries, and these are not built: " +
            ", ".join(missing) + ". pip does not build them (that needs Go, CMake and a C++ compiler): "
            "run `make wheel` in the project root, which builds them and dist/onnxrl_sampler-*.whl, or "
            "`make native` and then pip again (ONNXRL_BUILD_DIR or -C build-dir=DIR names another CMake "
            "build folder).")
    out = []
    strip = shutil.which("strip")
    for n in NATIVE:
        src = os.path.join(build_dir, "lib", n)
        if strip:
            dst = os.path.join(tmp, n)
            subprocess.run([strip, "--strip-debug", "-o", dst, src], check=True)
            src = dst
        out.append((n, src))
    runtime = os.path.join(REPO, RUNTIME)
    check_runtime_digest(runtime)
    out.append((os.path.basename(runtime), runtime))
    return out


def check_runtime_digest(path: str) -> None:
    """Refuses an ONNX Runtime whose sha256 is not one of the install script's pinned digests."""
    pinned = set(re.findall(r"^[A-Z0-9]+_SHA256=([0-9a-f]{64})$", _read(os.path.join(REPO, RUNTIME_SCRIPT)).decode(),
                            re.M))
    got = hashlib.sha256(_read(path)).hexdigest()
    if got not in pinned:
        raise NativeLibrariesMissing(
            f"onnxrl_sampler: {path} has sha256 {got}, not a digest pinned in {RUNTIME_SCRIPT}: "
            "reinstall it with `make onnxruntime`")


def elf_needs(path: str) -> tuple[str, set[str], set[str]]:
    """The machine, the DT_NEEDED libraries and the version names (GLIBC_2.34, ...) an ELF64
    little-endian shared object needs (what `readelf -d` and `objdump -T` show)."""
    data = _read(path)
    if data[:6] != b"\x7fELF\x02\x01":
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    machine = {62: "x86_64", 183: "aarch64"}.get(struct.unpack_from("<H", data, 18)[0], "unknown")
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum = struct.unpack_from("<HH", data, 58)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]

    def string(strtab: int, off: int) -> str:
        start = sections[strtab][4] + off
        return data[start:data.index(b"\0", start)].decode()

    needed, versions = set(), set()
    for _, typ, _, _, off, size, link, _, _, entsize in sections:
        if typ == 6:  # SHT_DYNAMIC
            for i in range(0, size, entsize):
                tag, val = struct.unpack_from("<qQ", data, off + i)
                if tag == 1:  # DT_NEEDED
                    needed.add(string(link, val))
        elif typ == 0x6FFFFFFE:  # SHT_GNU_verneed
            pos = off
            while True:
                _, cnt, _, aux, nxt = struct.unpack_from("<HHIII", data, pos)
                apos = pos + aux
                for _ in range(cnt):
                    _, _, _, name, anext = struct.unpack_from("<IHHII", data, apos)
                    versions.add(string(link, name))
                    apos += anext
                if not nxt:
                    break
                pos += nxt
    return machine, needed, versions


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def platform_tag(paths: list[str]) -> str:
    """manylinux_2_X_<arch> for the oldest policy that allows every library's needs, or
    linux_<arch> (see the module doc)."""
    needs = [elf_needs(p) for p in paths]
    machines = {m for m, _, _ in needs}
    arch = machines.pop() if len(machines) == 1 else "unknown"
    if arch != "x86_64":  # the table holds x86_64's numbers
        return f"linux_{arch}"
    libs = set().union(*(n for _, n, _ in needs))
    versions = set().union(*(v for _, _, v in needs))
    if not libs <= MANYLINUX_LIBS:
        return "linux_x86_64"
    for name, limits in MANYLINUX:
        if all(_allowed(v, limits) for v in versions):
            return f"{name}_x86_64"
    return "linux_x86_64"


def _allowed(version: str, limits: dict[str, str]) -> bool:
    if version in MANYLINUX_NAMED:
        return True
    prefix, _, number = version.partition("_")
    if prefix not in limits or not re.fullmatch(r"[0-9]+(\.[0-9]+)*", number):
        return False
    return _version_key(number) <= _version_key(limits[prefix])


# ---- metadata and the archive ---------------------------------------------------------------

def _project() -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # imported here: get_requires_for_build_wheel, called first, asks for tomli
        import tomli as tomllib
    with open(os.path.join(PYTHON_DIR, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def _dist_name(project: dict) -> str:
    return re.sub(r"[-_.]+", "_", project["name"]).lower()


def _modules() -> list[str]:
    return sorted(n for n in os.listdir(os.path.join(PYTHON_DIR, PACKAGE)) if n.endswith(".py"))


def _metadata(project: dict) -> bytes:
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}",
             f"Summary: {project.get('description', '')}", "License: Apache-2.0"]
    if "requires-python" in project:
        lines.append(f"Requires-Python: {project['requires-python']}")
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    for extra, deps in sorted(project.get("optional-dependencies", {}).items()):
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    return ("\n".join(lines) + "\n").encode()


def _epoch() -> int:
    return max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")), 315532800)  # 1980-01-01


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _write_wheel(directory: str, project: dict, tag: str, files: list[tuple[str, bytes, int]],
                 notices: list[tuple[str, bytes]] = ()) -> str:
    """Writes the wheel of files (name in the archive, bytes, mode) with its dist-info, the
    project's LICENSE and the notices (name in dist-info, bytes) and returns its file name."""
    name, version = _dist_name(project), project["version"]
    info = f"{name}-{version}.dist-info"
    wheel = f"Wheel-Version: 1.0\nGenerator: onnxrl_build\nRoot-Is-Purelib: false\nTag: {tag}\n".encode()
    files = sorted(files) + [(f"{info}/METADATA", _metadata(project), 0o644), (f"{info}/WHEEL", wheel, 0o644)]
    if os.path.isfile(os.path.join(REPO, "LICENSE")):  # not in an sdist
        files.append((f"{info}/LICENSE", _read(os.path.join(REPO, "LICENSE")), 0o644))
    files += [(f"{info}/{n}", data, 0o644) for n, data in notices]
    record = [f"{arc},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
              f"{len(data)}" for arc, data, _ in files]
    files.append((f"{info}/RECORD", ("\n".join(record + [f"{info}/RECORD,,"]) + "\n").encode(), 0o644))
    path = os.path.join(directory, f"{name}-{version}-{tag}.whl")
    stamp = time.gmtime(_epoch())[:6]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data, mode in files:
            zi = zipfile.ZipInfo(arc, stamp)
            zi.external_attr = (0o100000 | mode) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return os.path.basename(path)
