"""Programs of kernel calls, checked and run in one C pass (``tesched/runtime/tesched_call.c``).

A :class:`Program` is a list of compiled C functions to call in order on a set of pointer slots, some
fixed in advance (an executable's constants and intermediate buffers), the others filled at each call by
the arguments, which are checked through the buffer protocol (C-contiguity, format, shape, writability,
no overlap of an output with another argument) before any pointer reaches C. ``Program.run(args)`` returns
``False`` when an argument does not pass, leaving the precise message (or the conversion of a DLPack
tensor) to the caller's slower path. The helper extension is compiled once with the configured C compiler
(``CC``) and cached on disk beside the kernels (:mod:`.cache`). This module does not decide what the programs compute.
"""
from __future__ import annotations

import functools
import os
import subprocess
import sysconfig
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from tesched.config import settings
from tesched.driver.cache import cache_dir, entry_key, entry_problem, remove_entry, store
from tesched.driver.compiler import RUNTIME_DIR, load_module
from tesched.errors import BuildError

SOURCE = RUNTIME_DIR / "tesched_call.c"
MODULE = "_tesched_call"
FLAGS = ("-O2", "-shared", "-fPIC", "-fno-strict-aliasing")

Dim = int
"""An argument dimension: an extent (>= 0) or ``-(p + 1)`` for symbolic size ``p``."""


@dataclass(frozen=True)
class ArgSpec:
    """What one argument of a program must be, and the slot its pointer fills."""

    dtype: np.dtype
    dims: tuple[Dim, ...]
    writable: bool
    slot: int

    def as_tuple(self) -> tuple:
        return (buffer_format(self.dtype), self.dtype.itemsize, self.dims, self.writable, self.slot)


@functools.lru_cache(maxsize=None)
def buffer_format(dtype: np.dtype) -> str:
    """The buffer-protocol format NumPy exports for arrays of ``dtype``."""
    return np.empty(1, dtype).data.format


def describable(dtype: np.dtype) -> bool:
    """Whether NumPy exports arrays of ``dtype`` with a buffer format the C checks can compare (not so for
    ``ml_dtypes.bfloat16``: kernels with such arguments check them in Python)."""
    try:
        buffer_format(dtype)
    except ValueError:
        return False
    return True


@functools.lru_cache(maxsize=None)
def _extension() -> Any:
    """The helper extension, compiled into the kernel cache unless already there. It depends on its
    source and the Python ABI only (the key holds both)."""
    source = SOURCE.read_text()
    include = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    path = cache_dir() / f"helper-{MODULE}-{entry_key(source, ' '.join(FLAGS), include)[:24]}{suffix}"

    def compile_helper(tmpdir: str) -> str:
        out_file = os.path.join(tmpdir, MODULE + suffix)
        done = subprocess.run([*settings().compiler, *FLAGS, "-I", include, str(SOURCE), "-o", out_file],
                              capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise BuildError(f"compiling the kernel call helper {SOURCE.name} failed:\n{done.stderr}")
        return out_file

    label = f"the kernel call helper {SOURCE.name}"
    if entry_problem(path) is None:
        try:
            return load_module(MODULE, path, label, None)
        except BuildError:
            pass                    # verified bytes that do not load: rebuilt below
    remove_entry(path)
    return store(path, compile_helper, lambda built: load_module(MODULE, built, label, None))



def helper_available() -> bool:
    """Whether the helper extension is there or can be compiled (a process without a C compiler, loading
    an exported library, calls kernels through cffi instead)."""
    try:
        _extension()
    except (BuildError, OSError):
        return False
    return True

Step = tuple[int, Sequence[int]]
"""The address of a C function ``int f(void *const *args)`` (the argv companion of a kernel, a graph
entry or an external function, :mod:`tesched.codegen.argv`) and its arguments: slot numbers >= 0, or
symbolic sizes ``-(p + 1)``. It returns 0, or a status (a tesched kernel: ``k`` when its ``k``-th heap
allocation failed, ``-k`` when its ``k``-th index check did)."""


class StepFailed(Exception):
    """Raised by :meth:`Program.run` when step ``step`` returned the nonzero ``status`` (the steps after it
    did not run); callers turn it into the error the status means."""

    def __init__(self, step: int, status: int):
        super().__init__(step, status)
        self.step, self.status = step, status


class Program:
    """Steps run on slots: ``run(args)`` checks ``args`` against ``specs``, fills their slots and calls
    every step; ``fixed`` holds the other slots' addresses; ``keep`` the objects those addresses belong to.

    Parameters
    ----------
    specs
        One per argument of ``run``, in order.
    fixed
        An address per slot (``0`` for slots the arguments fill).
    steps
        The functions to call, in order.
    n_params
        Symbolic sizes the argument dimensions bind.
    exclusive
        The fixed slots include buffers the steps write, so two threads may not run it at once.
    keep
        Objects that must outlive the program (the owners of the fixed addresses).
    """

    __slots__ = ("_capsule", "_run", "keep")

    def __init__(self, specs: Sequence[ArgSpec], fixed: Sequence[int], steps: Sequence[Step], n_params: int = 0,
                 exclusive: bool = False, keep: Any = None):
        ext = _extension()
        self._capsule = ext.make([s.as_tuple() for s in specs], list(fixed),
                                 [(fn, tuple(a)) for fn, a in steps], n_params, exclusive)
        self._run = ext.run
        self.keep = keep

    def run(self, args: tuple) -> bool:
        """Check ``args`` and run the steps: ``True``; or ``False`` when an argument does not pass. Raises
        :class:`StepFailed` when a step reports a failure."""
        result = self._run(self._capsule, args)
        if result.__class__ is tuple:
            raise StepFailed(*result)
        return result

    def runner(self, args: tuple = ()) -> Any:
        """A function of no arguments running the program on ``args`` (already known to pass); it raises
        :class:`StepFailed` as :meth:`run` does."""
        run, capsule = self._run, self._capsule

        def go() -> None:
            result = run(capsule, args)
            if result.__class__ is tuple:
                raise StepFailed(*result)
        return go


def address(array: np.ndarray) -> int:
    """The address of an array's first element."""
    return int(array.__array_interface__["data"][0])


def value_slots(values: Sequence[int]) -> tuple[np.ndarray, list[int]]:
    """``values`` stored as ``int64_t`` and the address of each, for fixed slots: an argv function takes a
    scalar by its address. Keep the array alive as long as the program."""
    store = np.array(values, dtype=np.int64)
    base = address(store) if store.size else 0
    return store, [base + 8 * k for k in range(store.size)]
