"""The C compiler as tesched uses it: its identity, the identifiers it already knows, and the cffi build.

Every function takes the :class:`~tesched.target.Target` whose compiler and flags apply. The runtime
header (``tesched/runtime/*.h``) is on the include path of every kernel. This module compiles and loads;
where the result is stored is :mod:`.cache`'s job, what is compiled is the C generator's.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import io
import os
import re
import shutil
import subprocess
import sysconfig
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Sequence

import cffi

from tesched.driver.cache import cache_dir
from tesched.errors import BuildError
from tesched.target import Target

RUNTIME_DIR = Path(__file__).resolve().parent.parent / "runtime"
LINK_FLAGS = ("-fopenmp",)


NO_COMPILER_HINT = ("tesched compiles kernels with gcc: install it (Debian/Ubuntu: apt-get install gcc; Fedora: "
                    "dnf install gcc) or set the CC environment variable to a C compiler's command")


@functools.lru_cache(maxsize=None)
def compiler_id(compiler: tuple[str, ...]) -> str:
    """The compiler command and the first line of its ``--version``.

    The answer is recorded in the kernel cache beside the executable's path, size and modification time,
    so that a later process asks the compiler only when it changed; and a process on a machine where the
    command is gone still finds its cached kernels (they are keyed by this identity), compiling nothing."""
    command = compiler[0] if compiler else ""
    record = cache_dir() / f"compiler-{hashlib.sha256(' '.join(compiler).encode()).hexdigest()[:24]}.txt"
    executable = shutil.which(command) if command else None
    stamp = ""
    if executable is not None:
        info = os.stat(executable)
        stamp = f"{os.path.realpath(executable)} {info.st_size} {info.st_mtime_ns}"
    with contextlib.suppress(OSError):
        recorded_stamp, recorded_id = record.read_text().split("\n", 1)
        if executable is None or recorded_stamp == stamp:
            return recorded_id
    try:
        out = subprocess.run([command, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as err:
        raise BuildError(f"no C compiler found ({' '.join(compiler)}: {err}). {NO_COMPILER_HINT}") from None
    identity = f"{' '.join(compiler)}: {out.stdout.splitlines()[0] if out.stdout else out.stderr.strip()}"
    if stamp:
        tmp = record.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(f"{stamp}\n{identity}")
        os.replace(tmp, record)
    return identity


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
    return _identifiers(target, '#include <Python.h>\n#include "tesched_runtime.h"\n', "reserved", _ANY_TOKEN,
                        _ANY_TOKEN)


SYSTEM_HEADERS = ("stdio.h", "stdlib.h", "string.h", "math.h", "stdint.h", "unistd.h", "pthread.h", "signal.h",
                  "time.h", "fcntl.h", "dlfcn.h", "omp.h")


_ANY_TOKEN = re.compile(r"\b([A-Za-z_]\w*)\b")
_MACRO = re.compile(r"^#define\s+([A-Za-z_]\w*)", re.MULTILINE)
# after preprocessing: a declared or called function, a typedef name, an extern object
_DECLARED = re.compile(r"\b([A-Za-z_]\w*)\s*\(|\btypedef\b[^;{}]*?\b([A-Za-z_]\w*)\s*(?:\[[^;]*\])?;"
                       r"|\bextern\b[^;(){}]*?\b([A-Za-z_]\w*)\s*(?:\[[^;]*\])?;")


@functools.lru_cache(maxsize=None)
def system_identifiers(target: Target) -> frozenset[str]:
    """The macros, functions, types and global objects of the C library's, the math library's and OpenMP's
    headers (:data:`SYSTEM_HEADERS`): a public symbol of an exported library must not be one of them, or it
    would clash with, or replace, the system's in the program that links it."""
    return _identifiers(target, "".join(f"#include <{h}>\n" for h in SYSTEM_HEADERS), "system", _MACRO, _DECLARED)


def _identifiers(target: Target, source: str, kind: str, macros: re.Pattern[str],
                 pattern: re.Pattern[str]) -> frozenset[str]:
    """The identifiers ``macros`` finds in the macro definitions of translation unit ``source`` and
    ``pattern`` in its preprocessed text, cached on disk per compiler, flags, headers, source and patterns."""
    include = sysconfig.get_paths()["include"]
    parts = [compiler_id(target.compiler), " ".join(target.flags), include, runtime_text(), source, macros.pattern,
             pattern.pattern]
    key = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]
    path = cache_dir() / f"{kind}-{key}.txt"
    if path.exists():
        return frozenset(path.read_text().split())
    args = [*target.compiler, "-x", "c", "-", "-I", include, "-I", str(RUNTIME_DIR),
            *[f for f in target.flags if f != "-w"]]
    names: set[str] = set()
    for mode, found in ((["-dM", "-E"], macros), (["-E", "-P"], pattern)):
        out = subprocess.run(args + mode, input=source, capture_output=True, text=True, timeout=60)
        names.update(name for match in found.finditer(out.stdout) for name in match.groups() if name)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text("\n".join(sorted(names)))
    os.replace(tmp, path)
    return frozenset(names)


KERNEL_FLAGS = ("-shared", "-fPIC", "-fwrapv", "-DNDEBUG")
PCH_HEADER = "tesched_pch.h"


def _include_flags() -> list[str]:
    return ["-I", str(RUNTIME_DIR), "-I", sysconfig.get_paths()["include"]]


@functools.lru_cache(maxsize=None)
def _cffi_prologue() -> str:
    """The lines cffi writes before a module's own source, up to and including ``#include <Python.h>``
    (the macros it defines first, such as ``Py_LIMITED_API``, decide what Python.h declares)."""
    ffi = cffi.FFI()
    ffi.set_source("_tesched_prologue", "")
    with tempfile.TemporaryDirectory() as tmpdir, contextlib.redirect_stdout(io.StringIO()):
        c_file = Path(tmpdir) / "prologue.c"
        ffi.emit_c_code(str(c_file))
        text = c_file.read_text()
    head, found, _ = text.partition("#include <Python.h>\n")
    return head + found if found else ""


def precompiled_header(target: Target, wait: bool = False) -> str | None:
    """The path of a header to pass with ``-include``, beside its gcc precompiled form, or None where there
    is none yet (being made, or a compiler other than gcc, or a precompilation that failed).

    Parsing Python.h and the runtime header (which brings in ``immintrin.h``) is most of a small kernel's
    compile time; gcc reads a ``.gch`` instead. The header repeats cffi's prologue, so that Python.h is
    seen with the same macros, then includes the runtime; the kernel's own ``#include`` lines find both
    already guarded. gcc uses the ``.gch`` only when it was made with the same compiler and flags, and
    otherwise reads the header's text: either way the kernel means the same. The pair is cached on disk
    per compiler, flags and header text. The first request starts its precompilation in a process of its
    own and answers None, so that the kernel asking compiles at once, beside it, as it would without;
    ``wait=True`` makes it first instead."""
    return _precompiled_header(target, compiler_id(target.compiler), wait)


# a precompilation in progress older than this was interrupted: it is started again
STALE_PRECOMPILATION_SECONDS = 300


def _precompiled_header(target: Target, identity: str, wait: bool = False) -> str | None:
    made = _header_text(target, identity)
    if made is None:
        return None
    text, flags, key = made
    directory = cache_dir() / f"pch-{key}"
    header, compiled, failed = directory / PCH_HEADER, directory / f"{PCH_HEADER}.gch", directory / "failed"
    if compiled.exists():
        return str(header)
    if failed.exists():
        return None
    directory.mkdir(parents=True, exist_ok=True)
    marker = directory / "building"
    with contextlib.suppress(OSError):
        if time.time() - marker.stat().st_mtime > STALE_PRECOMPILATION_SECONDS:
            marker.unlink()
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:         # another process or thread is making it
        while wait and marker.exists() and not compiled.exists():
            time.sleep(0.05)
        return str(header) if wait and compiled.exists() else None
    suffix = f".{os.getpid()}.tmp"
    header.with_suffix(suffix).write_text(text)
    os.replace(header.with_suffix(suffix), header)
    compile_header = [*target.compiler, "-x", "c-header", *flags, str(header), "-o"]
    partial, log = directory / f"{PCH_HEADER}.gch{suffix}", directory / f"log{suffix}"
    # one shell line, so that the .gch is put in place (or the failure recorded) even after this process ends
    command = ["sh", "-c", 'out=$1 log=$2 bad=$3 mark=$4 tmp=$5; shift 5; '
               '"$@" "$tmp" 2> "$log" && mv -f "$tmp" "$out" || mv -f "$log" "$bad"; rm -f "$mark" "$log"',
               "sh", str(compiled), str(log), str(failed), str(marker), str(partial), *compile_header]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env=dict(os.environ, LC_ALL="C"), start_new_session=True)
    if not wait:
        return None
    process.wait()
    return str(header) if compiled.exists() else None


@functools.lru_cache(maxsize=None)
def _header_text(target: Target, identity: str) -> tuple[str, list[str], str] | None:
    """The precompiled header's text, the flags it is compiled with and its cache key (None: not gcc)."""
    prologue = _cffi_prologue()
    if "gcc" not in identity.lower() or not prologue:
        return None
    text = f'{prologue}#include "tesched_runtime.h"\n'
    flags = [*KERNEL_FLAGS[1:], *target.flags, *LINK_FLAGS, *_include_flags()]
    key = hashlib.sha256("\0".join([identity, *flags, text, runtime_text()]).encode()).hexdigest()[:24]
    return text, flags, key


def compile_module(module_name: str, source: str, declaration: str, target: Target, tmpdir: str,
                   label: str) -> str:
    """Compile ``source`` into a cffi extension module in ``tmpdir``; returns the file's path. Raises
    :class:`~tesched.errors.BuildError` naming ``label`` (the kernel) with the compiler's own diagnostic
    (gcc's output is captured, not left on standard error where a notebook loses it)."""
    ffi = cffi.FFI()
    ffi.cdef(declaration)
    ffi.set_source(module_name, source)
    c_file = Path(tmpdir) / f"{module_name}.c"
    with contextlib.redirect_stdout(io.StringIO()):   # cffi announces the file it writes
        ffi.emit_c_code(str(c_file))
    out = Path(tmpdir) / f"{module_name}{sysconfig.get_config_var('EXT_SUFFIX')}"
    header = precompiled_header(target)
    forced = ["-include", header] if header is not None else []
    command = [*target.compiler, *KERNEL_FLAGS, *target.flags, *_include_flags(), *forced, str(c_file), "-o",
               str(out), *LINK_FLAGS]
    run_tool(command, tmpdir, label, source)
    return str(out)


def run_tool(command: Sequence[str], cwd: str | Path, label: str, source: str | None = None) -> None:
    """Run a compiler (or linker, archiver) ``command`` in ``cwd``. Raises
    :class:`~tesched.errors.BuildError` naming ``label`` with the tool's own diagnostic (and ``source``,
    when given, the C text it compiled)."""
    try:
        done = subprocess.run(list(command), cwd=cwd, capture_output=True, text=True,
                              env=dict(os.environ, LC_ALL="C"))
    except OSError as err:
        raise BuildError(f"C compilation of {label} failed: cannot run {command[0]}: {err}. {NO_COMPILER_HINT}") from None
    if done.returncode != 0:
        diagnostic = (done.stderr or done.stdout).strip()
        shown = f"\n--- source ---\n{source}" if source is not None else ""
        raise BuildError(f"C compilation of {label} failed:\n{diagnostic}{shown}")


def load_module(module_name: str, path: Path | str, label: str, function: str | None) -> ModuleType:
    """Import a compiled extension module from ``path`` and check that its cffi ``lib`` defines
    ``function`` (None: a plain extension module, nothing to check). Raises
    :class:`~tesched.errors.BuildError` naming ``label`` (e.g. a C intrinsic calling a function that no
    source defines: ``undefined symbol``)."""
    try:
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"no loader for {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if function is not None:
            getattr(module.lib, function)
    except (ImportError, AttributeError, OSError) as err:
        raise BuildError(f"the compiled kernel {label} cannot be loaded: {err}") from None
    return module
