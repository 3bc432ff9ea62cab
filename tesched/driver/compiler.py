"""The C compiler as tesched uses it: its identity, the identifiers it already knows, and the cffi build.

Every function takes the :class:`~tesched.target.Target` whose compiler and flags apply. The runtime
header (``tesched/runtime/*.h``) is on the include path of every kernel. This module compiles and loads;
where the result is stored is :mod:`.cache`'s job, what is compiled is the C generator's.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re
import subprocess
import sysconfig
from pathlib import Path
from types import ModuleType

import cffi

from tesched.driver.cache import cache_dir
from tesched.errors import BuildError
from tesched.target import Target

RUNTIME_DIR = Path(__file__).resolve().parent.parent / "runtime"
LINK_FLAGS = ("-fopenmp",)


@functools.lru_cache(maxsize=None)
def compiler_id(compiler: tuple[str, ...]) -> str:
    """The compiler command and the first line of its ``--version``."""
    try:
        out = subprocess.run([compiler[0], "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError, IndexError) as err:
        raise BuildError(f"no C compiler found ({' '.join(compiler)}): {err}") from None
    return f"{' '.join(compiler)}: {out.stdout.splitlines()[0] if out.stdout else out.stderr.strip()}"


@functools.lru_cache(maxsize=None)
def runtime_text() -> str:
    """The runtime header(s) every kernel includes (part of the cache key)."""
    return "".join(p.read_text() for p in sorted(RUNTIME_DIR.glob("*.h")))


@functools.lru_cache(maxsize=None)
def reserved_identifiers(target: Target) -> frozenset[str]:
    """Every identifier the C compiler already knows in a kernel's translation unit: macros (predefined
    ones such as ``linux``, and those of the headers such as ``HUGE_VAL`` or ``errno``) and names the
    headers declare (``round``, ``select``, Python's API). Generated names avoid them. Cached on disk per
    compiler, flags and headers, since asking the compiler takes ~0.1 s."""
    include = sysconfig.get_paths()["include"]
    key = hashlib.sha256("\0".join([compiler_id(target.compiler), " ".join(target.flags), include,
                                     runtime_text()]).encode()).hexdigest()[:24]
    path = cache_dir() / f"reserved-{key}.txt"
    if path.exists():
        return frozenset(path.read_text().split())
    source = '#include <Python.h>\n#include "tesched_runtime.h"\n'
    args = [*target.compiler, "-x", "c", "-", "-I", include, "-I", str(RUNTIME_DIR),
            *[f for f in target.flags if f != "-w"]]
    names: set[str] = set()
    for mode in (["-dM", "-E"], ["-E", "-P"]):
        out = subprocess.run(args + mode, input=source, capture_output=True, text=True, timeout=60)
        names.update(re.findall(r"\b[A-Za-z_]\w*\b", out.stdout))
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text("\n".join(sorted(names)))
    os.replace(tmp, path)
    return frozenset(names)


def compile_module(module_name: str, source: str, declaration: str, target: Target, tmpdir: str,
                   label: str) -> str:
    """Compile ``source`` into a cffi extension module in ``tmpdir``; returns the file's path. Raises
    :class:`~tesched.errors.BuildError` naming ``label`` (the kernel) with the compiler's message."""
    ffi = cffi.FFI()
    ffi.cdef(declaration)
    ffi.set_source(module_name, source, include_dirs=[str(RUNTIME_DIR)],
                   extra_compile_args=list(target.flags), extra_link_args=list(LINK_FLAGS))
    try:
        return ffi.compile(tmpdir=tmpdir, verbose=False)
    except Exception as err:  # the compiler's message is in err
        raise BuildError(f"C compilation of {label} failed: {err}\n--- source ---\n{source}") from None


def load_module(module_name: str, path: Path) -> ModuleType:
    """Import a compiled extension module from ``path``."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise BuildError(f"cannot load compiled kernel {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
