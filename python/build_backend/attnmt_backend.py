"""PEP 517 build backend for `pip install ./python`: no build requirements, so it works offline.

The module is built by the project's own CMake build (the folder in $ATTNMT_BUILD_DIR, else
build/ at the project root, else build/python-<tag>/ when build/ was configured for another
CPython), then packed with SentencePiece's module into a wheel for the running interpreter.
"""
import base64
import hashlib
import importlib.machinery
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parent.parent
ROOT = PYTHON_DIR.parent
NAME = "attnmt"


def _version():
    cmake = ROOT / "CMakeLists.txt"
    if not cmake.exists():
        raise RuntimeError(f"attnmt: build the package from a checkout of attnmt (no {cmake})")
    found = re.search(r"project\(attnmt VERSION ([0-9.]+)", cmake.read_text())
    if not found:
        raise RuntimeError(f"attnmt: no 'project(attnmt VERSION ...)' in {cmake}")
    return found.group(1)


def _tag():
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{py}-{py}-{platform}"


def _module_name():
    return "_attnmt" + importlib.machinery.EXTENSION_SUFFIXES[0]


def _cached_python(build):
    cache = build / "CMakeCache.txt"
    if not cache.exists():
        return None
    found = re.search(r"^Python3_EXECUTABLE:[A-Z]+=(.*)$", cache.read_text(errors="replace"), re.M)
    return found.group(1) if found else None


def _build_dir():
    if os.environ.get("ATTNMT_BUILD_DIR"):
        return Path(os.environ["ATTNMT_BUILD_DIR"]).resolve()
    build = ROOT / "build"
    cached = _cached_python(build)
    if cached is None or (build / "python" / NAME / _module_name()).exists():
        return build
    return ROOT / "build" / f"python-{_tag()}"  # build/ holds a module for another CPython


def _run(command):
    print("attnmt:", " ".join(str(c) for c in command), file=sys.stderr, flush=True)
    subprocess.run([str(c) for c in command], check=True, stdout=sys.stderr)


def _build_module():
    build = _build_dir()
    if not (build / "CMakeCache.txt").exists():
        # The running interpreter's base CPython: a virtual environment's python has no headers.
        python = Path(sys._base_executable if hasattr(sys, "_base_executable") else sys.executable)
        _run(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release", f"-DPython3_EXECUTABLE={python}",
              "-DATTNMT_BUILD_TESTS=OFF"])
    _run(["cmake", "--build", build, "--target", "attnmt_python", "-j", str(os.cpu_count() or 2)])
    module = build / "python" / NAME / _module_name()
    if not module.exists():
        raise RuntimeError(f"attnmt: the build in {build} made no {module.name} (is it configured for this "
                           f"Python, {sys.version.split()[0]}, with pybind11-dev and python3-dev installed?)")
    spm = build / "libattnmt_spm.so"
    if not spm.exists():
        raise RuntimeError(f"attnmt: no {spm}")
    return module, spm


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _metadata(version):
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\n"
            "Summary: RNN encoder-decoder machine translation with pluggable attention\n"
            "Requires-Python: >=3.8\n")


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    version = _version()
    dist_info = Path(metadata_directory) / f"{NAME}-{version}.dist-info"
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "METADATA").write_text(_metadata(version))
    return dist_info.name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    module, spm = _build_module()
    tag = _tag()
    dist_info = f"{NAME}-{version}.dist-info"
    files = [
        (f"{NAME}/__init__.py", (PYTHON_DIR / NAME / "__init__.py").read_bytes(), 0o644),
        (f"{NAME}/{module.name}", module.read_bytes(), 0o755),
        (f"{NAME}/libattnmt_spm.so", spm.read_bytes(), 0o755),
        (f"{dist_info}/METADATA", _metadata(version).encode(), 0o644),
        (f"{dist_info}/WHEEL",
         f"Wheel-Version: 1.0\nGenerator: attnmt_backend\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(), 0o644),
    ]
    record = "\n".join([_record_line(p, d) for p, d, _ in files] + [f"{dist_info}/RECORD,,", ""])
    files.append((f"{dist_info}/RECORD", record.encode(), 0o644))
    wheel = f"{NAME}-{version}-{tag}.whl"
    with zipfile.ZipFile(Path(wheel_directory) / wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data, mode in files:
            info = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = mode << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return wheel
