"""Compile generated C through cffi, cache the result on disk, and return :class:`~tesched.kernel.Kernel`.

The cache key is the SHA-256 of the C source, its declaration, the compiler flags, the compiler's version
line, the runtime header, tesched's version and the Python ABI. Kernels are built in a private temporary
directory and moved into the cache with ``os.replace``, so concurrent builds of one kernel are safe and
a cached kernel never calls the compiler. The cache lives in ``$TESCHED_CACHE_DIR``, else
``$XDG_CACHE_HOME/tesched``, else ``~/.cache/tesched``.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sysconfig
import tempfile
from pathlib import Path
from typing import Sequence

import cffi

from tesched.codegen.c import CSource, generate_c
from tesched.driver.kernel import Kernel
from tesched.errors import BuildError
from tesched.lower.pipeline import LoweredFunc, lower, lower_for_target
from tesched.schedule.schedule import Schedule
from tesched.te.tensor import Tensor
from tesched.version import __version__

RUNTIME_DIR = Path(__file__).resolve().parent.parent / "runtime"

COMPILE_FLAGS = ("-O3", "-march=native", "-fopenmp", "-fno-math-errno", "-w")
LINK_FLAGS = ("-fopenmp",)

_loaded: dict[str, object] = {}


def cache_dir() -> Path:
    root = os.environ.get("TESCHED_CACHE_DIR")
    if root:
        path = Path(root)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = Path(base) / "tesched"
    path.mkdir(parents=True, exist_ok=True)
    return path


@functools.lru_cache(maxsize=None)
def compiler_id() -> str:
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    try:
        out = subprocess.run(cc.split()[:1] + ["--version"], capture_output=True, text=True, timeout=30)
        return f"{cc}: {out.stdout.splitlines()[0] if out.stdout else out.stderr.strip()}"
    except (OSError, subprocess.SubprocessError) as err:
        raise BuildError(f"no C compiler found ({cc}): {err}") from None


@functools.lru_cache(maxsize=None)
def _runtime_text() -> str:
    return "".join(p.read_text() for p in sorted(RUNTIME_DIR.glob("*.h")))


@functools.lru_cache(maxsize=None)
def reserved_identifiers() -> frozenset[str]:
    """Every identifier the C compiler already knows in a kernel's translation unit: macros (predefined
    ones such as ``linux``, and those of the headers such as ``HUGE_VAL`` or ``errno``) and names the
    headers declare (``round``, ``select``, Python's API). Generated names avoid them. Cached on disk per
    compiler, flags and headers, since asking the compiler takes ~0.1 s."""
    include = sysconfig.get_paths()["include"]
    key = hashlib.sha256("\0".join([compiler_id(), " ".join(COMPILE_FLAGS), include,
                                     _runtime_text()]).encode()).hexdigest()[:24]
    path = cache_dir() / f"reserved-{key}.txt"
    if path.exists():
        return frozenset(path.read_text().split())
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[:1]
    source = '#include <Python.h>\n#include "tesched_runtime.h"\n'
    args = cc + ["-x", "c", "-", "-I", include, "-I", str(RUNTIME_DIR)] + [f for f in COMPILE_FLAGS if f != "-w"]
    names: set[str] = set()
    for mode in (["-dM", "-E"], ["-E", "-P"]):
        out = subprocess.run(args + mode, input=source, capture_output=True, text=True, timeout=60)
        names.update(re.findall(r"\b[A-Za-z_]\w*\b", out.stdout))
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text("\n".join(sorted(names)))
    os.replace(tmp, path)
    return frozenset(names)


def cache_key(src: CSource) -> str:
    h = hashlib.sha256()
    for part in (src.source, src.declaration, " ".join(COMPILE_FLAGS + LINK_FLAGS), compiler_id(),
                 _runtime_text(), __version__, sysconfig.get_config_var("EXT_SUFFIX") or ""):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _import(module_name: str, path: Path):
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise BuildError(f"cannot load compiled kernel {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compile_c(src: CSource) -> tuple[object, bool]:
    """The loaded cffi module for ``src`` and whether the compiler ran."""
    key = cache_key(src)
    module_name = f"_tesched_{key[:24]}"
    if module_name in _loaded:
        return _loaded[module_name], False
    target = cache_dir() / f"{module_name}{sysconfig.get_config_var('EXT_SUFFIX')}"
    compiled = False
    if not target.exists():
        ffi = cffi.FFI()
        ffi.cdef(src.declaration)
        ffi.set_source(module_name, src.source, include_dirs=[str(RUNTIME_DIR)],
                       extra_compile_args=list(COMPILE_FLAGS), extra_link_args=list(LINK_FLAGS))
        tmp = tempfile.mkdtemp(prefix="build-", dir=cache_dir())
        try:
            try:
                built = ffi.compile(tmpdir=tmp, verbose=False)
            except Exception as err:  # the compiler's message is in err
                raise BuildError(f"C compilation of {src.name} failed: {err}\n--- source ---\n{src.source}") from None
            os.replace(built, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        compiled = True
    module = _import(module_name, target)
    _loaded[module_name] = module
    return module, compiled


def build(inputs: Schedule | LoweredFunc, args: Sequence[Tensor] | None = None, target: str = "c",
          name: str = "default_function") -> Kernel:
    """Lower (if given a schedule), generate C, compile it (or reuse the cache) and return a Kernel."""
    if target not in ("c", "llvm", "host"):
        raise ValueError(f"unsupported target {target!r}; tesched compiles C for the host")
    if isinstance(inputs, LoweredFunc):
        func = inputs
    else:
        if args is None:
            raise TypeError("build(schedule, args): args (the kernel's tensors) are required")
        func = lower(inputs, args, name=name)
    src = generate_c(lower_for_target(func), reserved_identifiers())
    module, compiled = compile_c(src)
    kernel = Kernel(func, src, module)
    kernel.compiled = compiled
    kernel.cache_key = cache_key(src)
    return kernel

