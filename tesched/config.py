"""Every environment variable tesched reads, in one place.

:data:`VARIABLES` lists them with their meaning and default (the README's table is checked against it);
:func:`settings` reads them into a :class:`Settings` value, validating each and naming the variable in
the error. The environment is read at each call (it is cheap), so a variable set by a test or by an
application before a build takes effect. No other module reads the environment.
"""
from __future__ import annotations

import logging
import os
import shlex
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import platformdirs

from tesched.errors import ConfigError


@dataclass(frozen=True)
class Variable:
    """One environment variable: its name, what it does, and its default."""

    name: str
    meaning: str
    default: str


VARIABLES: tuple[Variable, ...] = (
    Variable("TESCHED_CACHE_DIR", "directory of the compiled-kernel cache",
             "the user cache directory of tesched (platformdirs: ~/.cache/tesched on Linux)"),
    Variable("TESCHED_DEBUG", "1: log every lowering pass with its output and time (logger `tesched`)", "0"),
    Variable("TESCHED_VERIFY", "1: check the loop IR's invariants after every lowering pass (`tesched.ir.verify`; "
             "also on with `TESCHED_DEBUG`)", "0"),
    Variable("TESCHED_TARGET", "default target of `build` (`host`, `x86-64-avx512`, `x86-64-avx2`, "
             "`x86-64`, `c`)", "host"),
    Variable("TESCHED_VECTOR_BYTES", "SIMD width of the host target in bytes (16, 32 or 64)",
             "from the CPU flags"),
    Variable("TESCHED_NUM_THREADS", "threads of `parallel` loops (as `ts.set_num_threads`)",
             "the OpenMP default (one per core)"),
    Variable("TESCHED_INTRIN_ISA", "instruction set of the GEMM micro-kernels (`avx512`, `avx2`, `c`)",
             "the widest the target offers"),
    Variable("TESCHED_BUILD_LOG", "a file to which every CPU `build` appends a JSON line: the kernel, its seconds "
             "(lowering, code generation, compilation) and whether the compiler ran", "unset: no log"),
    Variable("TESCHED_QUICK", "1: demo and tutorials use small sizes (as `--quick`)", "0"),
    Variable("CC", "C compiler command (with its own flags) for kernels and external libraries",
             "Python's configured compiler, else `cc`"),
    Variable("OMP_WAIT_POLICY", "how idle OpenMP threads wait: `active` (spin) or `passive` (sleep); read by the "
             "OpenMP runtimes, set to `passive` by `python -m tesched.bench` when unset",
             "the runtime's (spin for a while)"),
    Variable("XDG_CACHE_HOME", "base of the default cache directory on Linux (read by platformdirs)", "~/.cache"),
)


@dataclass(frozen=True)
class Settings:
    """The environment, parsed."""

    cache_dir: Path
    debug: bool
    target: str
    verify: bool
    vector_bytes: int | None
    num_threads: int | None
    intrin_isa: str | None
    quick: bool
    compiler: tuple[str, ...]
    build_log: Path | None = None


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def _positive(name: str, choices: tuple[int, ...] | None = None) -> int | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"environment variable {name}={text!r} is not an integer") from None
    if value < 1 or (choices is not None and value not in choices):
        expected = f"one of {', '.join(map(str, choices))}" if choices else "a positive integer"
        raise ConfigError(f"environment variable {name}={text!r} must be {expected}")
    return value


def settings() -> Settings:
    """The current settings (raises :class:`~tesched.errors.ConfigError` naming a malformed variable)."""
    root = os.environ.get("TESCHED_CACHE_DIR")
    cache = Path(root) if root else Path(platformdirs.user_cache_dir("tesched", appauthor=False))
    compiler = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return Settings(
        cache_dir=cache,
        debug=_flag("TESCHED_DEBUG"),
        target=os.environ.get("TESCHED_TARGET", "").strip() or "host",
        verify=_flag("TESCHED_VERIFY") or _flag("TESCHED_DEBUG"),
        vector_bytes=_positive("TESCHED_VECTOR_BYTES", (16, 32, 64)),
        num_threads=_positive("TESCHED_NUM_THREADS"),
        intrin_isa=os.environ.get("TESCHED_INTRIN_ISA", "").strip() or None,
        quick=_flag("TESCHED_QUICK"),
        compiler=tuple(shlex.split(compiler)),
        build_log=Path(os.environ["TESCHED_BUILD_LOG"]) if os.environ.get("TESCHED_BUILD_LOG") else None,
    )


def variables_set(names: Iterable[str]) -> dict[str, str]:
    """The variables among ``names`` that are set, with their values (for reports of what other libraries
    were told, such as the peers of a benchmark)."""
    return {name: os.environ[name] for name in names if name in os.environ}


def prefer_passive_openmp() -> str:
    """Set ``OMP_WAIT_POLICY=passive`` unless the user set it, and return the policy in force.

    Called by the benchmark suite before any OpenMP runtime is loaded (they read it once, at load): with
    tesched's, PyTorch's and OpenBLAS's thread pools in one process on few cores, a pool spinning after its
    call takes the cores from the next library's call (a quick run measured PyTorch 10,000 times slower)."""
    return os.environ.setdefault("OMP_WAIT_POLICY", "passive")


class _StandardError(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of each record."""

    @property
    def stream(self):  # the stream is looked up at each record, never stored
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def debug_logger(name: str, enabled: bool) -> logging.Logger:
    """The logger ``name`` (under ``tesched``). When ``enabled`` and the application has given the
    ``tesched`` logger no handler of its own, INFO records go to standard error (and only there)."""
    logger = logging.getLogger(name)
    root = logging.getLogger("tesched")
    if enabled and not root.handlers:
        handler = _StandardError()
        handler.setFormatter(logging.Formatter("%(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        root.propagate = False
    return logger
