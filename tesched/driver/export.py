"""Export a kernel as a C library: the code behind ``Kernel.export_library`` and ``Kernel.export_c``.

The kernel's lowered function is finished for the chosen :class:`~tesched.target.Target` (by default the
one it was built for) and generated again under a private name (``<name>_kernel``); the public entry point
(:mod:`tesched.codegen.entry`) calls it after its checks. The library embeds a
:class:`~tesched.driver.manifest.BuildRecord` holding the kernel's signature and C source, so that
:func:`tesched.load_module` can rebuild the Python-side checks without a compiler. Compiling and writing the
files is :mod:`.library`'s job.
"""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from tesched.codegen.c import generate_c
from tesched.codegen.entry import kernel_entry
from tesched.codegen.names import C_KEYWORDS, sanitize
from tesched.codegen.signature import signature_of
from tesched.driver.compiler import compiler_id, reserved_identifiers, runtime_text, system_identifiers
from tesched.driver.library import ENTRY_FLAGS, LibrarySources, Unit, build_library, write_sources
from tesched.driver.manifest import BuildRecord, content_hash
from tesched.lower.func import LoweredFunc
from tesched.lower.pipeline import lower_for_target
from tesched.target import Target


def public_prefix(name: str, explicit: bool, target: Target, what: str) -> str:
    """The C name of an exported entry point: ``name`` itself when given ``explicit``ly (it must then be a
    C identifier), else ``name`` made one. Refused when it is a C keyword or when the C library, the math
    library or OpenMP already use it (the library's symbol would replace theirs in the program that links
    it)."""
    if explicit and not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise ValueError(f"{what}: name {name!r} is not a C identifier (letters, digits and _, not first a digit)")
    prefix = name if explicit else sanitize(name)
    reserved = prefix.startswith(("ts_", "TS_", "tesched_", "TESCHED_")) or prefix in C_KEYWORDS
    if reserved or prefix in system_identifiers(target):
        raise ValueError(f"{what}: the C entry point would be named {prefix}, a name the C library or tesched's "
                         "runtime already uses; pass name='...' to export it under another name")
    return prefix


def kernel_sources(func: LoweredFunc, target: Target, name: str | None = None) -> LibrarySources:
    """The sources of kernel ``func`` exported for ``target`` as C function ``name`` (default: the
    kernel's name)."""
    what = f"export of kernel {func.name}"
    prefix = public_prefix(name if name is not None else func.name, name is not None, target, what)
    public = {prefix, f"{prefix}_last_error", f"{prefix}_build_info"}
    finished = lower_for_target(func, target)
    kernel = generate_c(replace(finished, name=f"{prefix}_kernel"), reserved_identifiers(target) | public, target)
    sig = signature_of(func, kernel.allocations, kernel.checks)
    compiler = compiler_id(target.compiler)
    digest = content_hash([kernel.source, repr(sig.to_json()), " ".join(target.flags), " ".join(ENTRY_FLAGS),
                           compiler, runtime_text()])
    record = BuildRecord.for_target("kernel", func.name, prefix, target, compiler, digest,
                                    {"signature": sig.to_json(), "c_source": kernel.source})
    entry = kernel_entry(sig, prefix, kernel, record.to_json(), target.name, target.isa_features, f"{prefix}.h")
    units = (Unit(f"{prefix}_kernel.c", kernel.source, True), Unit(f"{prefix}.c", entry.source, False))
    return LibrarySources(prefix, entry.header, units, target)


def library_kind(path: Path, static: bool | None, what: str) -> bool:
    """Whether ``path`` is to be a static archive: ``static`` if given (it must agree with a ``.so`` or
    ``.a`` suffix), else whether the suffix is ``.a``."""
    if static is None:
        return path.suffix == ".a"
    if (static and path.suffix == ".so") or (not static and path.suffix == ".a"):
        raise ValueError(f"{what}: static={static} but the path {path} ends with {path.suffix}")
    return static


def export_kernel(func: LoweredFunc, target: Target, path: str | Path, static: bool | None = None,
                  name: str | None = None) -> Path:
    """Compile kernel ``func`` for ``target`` into a library at ``path`` with its header beside it.

    Parameters
    ----------
    func : LoweredFunc
        The kernel's lowered function.
    target : Target
        The target to compile for.
    path : str or Path
        The library to write: a shared object (``.so``), or a static archive (``.a``).
    static : bool, optional
        Write a static archive; default: whether ``path`` ends with ``.a``.
    name : str, optional
        The C entry point's name (default: the kernel's name).

    Returns
    -------
    Path
        ``path``.
    """
    out = Path(path)
    is_static = library_kind(out, static, f"export of kernel {func.name}")
    return build_library(kernel_sources(func, target, name), out, is_static)


def export_kernel_c(func: LoweredFunc, target: Target, directory: str | Path, name: str | None = None) -> list[Path]:
    """Write the C sources of kernel ``func`` for ``target``, the runtime headers, its header and a Makefile
    into ``directory``; returns the files written."""
    return write_sources(kernel_sources(func, target, name), Path(directory))
