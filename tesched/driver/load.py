"""Open an exported library from Python without a compiler: ``tesched.load_module`` and what graph loading
shares with it.

:func:`open_library` reads the library's build record from its ELF section and refuses, before opening
it, a library of another kind, of another module ABI, or needing an instruction-set feature this CPU
lacks (:mod:`.manifest`); then cffi opens it in ABI mode (``ffi.dlopen``: nothing is compiled). A nonzero
status of an entry point becomes the Python exception its code stands for (:data:`STATUS_ERRORS`) with the
entry point's own message. :func:`load_module` rebuilds a :class:`~tesched.driver.kernel.Kernel` from the
recorded signature, so a loaded kernel checks its arguments exactly as the kernel it was exported from.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NoReturn, Sequence

import cffi

from tesched.codegen.argv import ARGV_SUFFIX, argv_prototype
from tesched.codegen.c import CSource
from tesched.codegen.entry import prototype
from tesched.codegen.export_text import ERROR_CODES
from tesched.codegen.signature import Signature
from tesched.driver.allocations import Allocations, evaluate_size
from tesched.driver.kernel import Kernel
from tesched.driver.manifest import BuildRecord, check_host, read_record
from tesched.errors import BoundsError, ModuleLoadError

STATUS_ERRORS: dict[int, type[Exception]] = {
    ERROR_CODES["TESCHED_ERROR_ARGUMENT"]: ValueError,
    ERROR_CODES["TESCHED_ERROR_SIZE"]: ValueError,
    ERROR_CODES["TESCHED_ERROR_ALLOCATION"]: MemoryError,
    ERROR_CODES["TESCHED_ERROR_CPU"]: ModuleLoadError,
    ERROR_CODES["TESCHED_ERROR_CONSTANTS"]: ModuleLoadError,
    ERROR_CODES["TESCHED_ERROR_INDEX"]: BoundsError,
}


@dataclass(frozen=True)
class ExportedLibrary:
    """An opened exported library: its file, its build record, and cffi's handle on it."""

    path: Path
    record: BuildRecord
    ffi: Any
    lib: Any

    def raise_status(self, status: int) -> NoReturn:
        """Raise the exception for a nonzero status of the entry point, with its message."""
        message = self.ffi.string(getattr(self.lib, f"{self.record.entry}_last_error")()).decode("utf-8", "replace")
        raise STATUS_ERRORS.get(status, RuntimeError)(message or f"{self.record.entry} failed with code {status}")


def checked_record(path: str | Path, kind: str) -> BuildRecord:
    """The build record of the exported library at ``path``, which must hold a ``kind`` (``"kernel"`` or
    ``"graph"``) this tesched and this CPU can run.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ModuleLoadError
        Not a tesched library, another kind, another module ABI, or a CPU feature missing.
    """
    file = Path(path)
    record = read_record(file)
    if record.kind != kind:
        loader = "tesched.load_module" if record.kind == "kernel" else "tesched.graph.load_executable"
        raise ModuleLoadError(f"{file} holds a {record.kind} ({record.name}), not a {kind}: load it with {loader}")
    check_host(record, file)
    return record


def open_library(path: str | Path, record: BuildRecord, declarations: Sequence[str]) -> ExportedLibrary:
    """Open the library at ``path`` (whose :func:`checked_record` is ``record``) with cffi, declaring its
    entry points with ``declarations`` (C prototypes; the argv form of the entry, :mod:`tesched.codegen.argv`,
    and the message and build-record accessors are added).
    Raises :class:`~tesched.errors.ModuleLoadError` if the dynamic loader refuses it."""
    file = Path(path)
    ffi = cffi.FFI()
    ffi.cdef("\n".join([*declarations, f"{argv_prototype(record.entry + ARGV_SUFFIX)};",
                        f"const char *{record.entry}_last_error(void);",
                        f"const char *{record.entry}_build_info(void);"]))
    try:
        lib = ffi.dlopen(str(file.resolve()))
    except OSError as err:
        raise ModuleLoadError(f"{file}: the dynamic loader refuses it: {err}") from None
    return ExportedLibrary(file, record, ffi, lib)


class _EntryErrors(Allocations):
    """A loaded kernel's heap buffers (checked before a call as for a built kernel); a nonzero status of
    its entry point raises the error the entry point describes."""

    def __init__(self, sig: Signature, library: ExportedLibrary):
        super().__init__(sig.name, sig.allocations, evaluate_size)
        self.library = library

    def raise_for(self, status: int, values: dict[int, int]) -> None:
        self.library.raise_status(status)


def load_module(path: str | Path) -> Kernel:
    """Load a kernel exported with ``Kernel.export_library`` (a shared object), without a compiler.

    Parameters
    ----------
    path : str or Path
        The ``.so`` file.

    Returns
    -------
    Kernel
        Called as the kernel it was exported from, with the same argument checks; ``build_record`` says
        what it was built for, ``c_source`` is its generated C, ``lowered`` is None.

    Raises
    ------
    ModuleLoadError
        The file is not an exported kernel, follows another module ABI, or needs a CPU feature this
        machine lacks.

    Example
    -------
    >>> f = ts.load_module("conv_relu.so")           # doctest: +SKIP
    >>> out = f(data, weight)                         # doctest: +SKIP
    """
    record = checked_record(path, "kernel")
    try:
        sig = Signature.from_json(record.contents["signature"])
    except (KeyError, ValueError) as err:
        raise ModuleLoadError(f"{path}: its build record has no usable kernel signature ({err})") from None
    declaration = f"{prototype(record.entry, sig)};"
    library = open_library(path, record, [declaration])
    src = CSource(name=record.entry, source=str(record.contents.get("c_source", "")), declaration=declaration,
                  argv=record.entry + ARGV_SUFFIX)
    kernel = Kernel(None, src, SimpleNamespace(ffi=library.ffi, lib=library.lib), sig, _EntryErrors(sig, library))
    kernel.build_record = record
    return kernel
