"""What an exported library was built for, recorded inside it, and the checks made before loading it.

A :class:`BuildRecord` holds the module ABI (:data:`EXPORT_ABI`: the contract between an exported library
and the code that loads it), tesched's version, the target (its name, the instruction-set features its
code may use, SIMD width, thread count, flags), the compiler, a content hash (SHA-256 of every source
compiled, the flags and the constants) and what the library holds (a kernel's signature, or a graph's
inputs and outputs). Exporting embeds it as JSON in the ELF section
:data:`~tesched.codegen.export_text.MANIFEST_SECTION`; :func:`read_record` reads it back without running
any of the library's code, and :func:`check_host` refuses a library of another module ABI, or one that
needs a feature this CPU lacks, with a :class:`~tesched.errors.ModuleLoadError` instead of an
illegal-instruction crash. This module neither compiles nor loads libraries.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from tesched.codegen.export_text import MANIFEST_SECTION
from tesched.driver.elf import read_section
from tesched.errors import ModuleLoadError
from tesched.target import Target, host_features
from tesched.version import __version__

EXPORT_ABI = 2
"""The version of the exported-library contract (entry points, error codes, build record). A library
exported under another value is refused when loaded: export it again."""

FORMAT = "tesched-module"


@dataclass(frozen=True)
class BuildRecord:
    """What an exported library holds and what it was built for.

    Attributes
    ----------
    kind : str
        ``"kernel"`` or ``"graph"``.
    name : str
        The kernel's or the graph's name.
    entry : str
        The public C function.
    target : str
        The target's name (``"host"``, ``"x86-64-avx2"``, ...).
    features : tuple of str
        The instruction-set features its code may use (``/proc/cpuinfo`` names), sorted.
    vector_bytes : int
        The SIMD width it was compiled for.
    threads : int or None
        The thread count fixed in its parallel loops, if any.
    flags : tuple of str
        The compiler flags of its kernels.
    compiler : str
        The compiler command and version.
    content_sha256 : str
        SHA-256 of its sources, flags and constants.
    contents : dict
        What it holds: ``{"signature": ...}`` for a kernel, the graph's interface for a graph.
    tesched_version : str
        The tesched that exported it.
    abi : int
        The module ABI it follows.
    """

    kind: str
    name: str
    entry: str
    target: str
    features: tuple[str, ...]
    vector_bytes: int
    threads: int | None
    flags: tuple[str, ...]
    compiler: str
    content_sha256: str
    contents: dict[str, Any] = field(default_factory=dict)
    tesched_version: str = __version__
    abi: int = EXPORT_ABI

    @classmethod
    def for_target(cls, kind: str, name: str, entry: str, target: Target, compiler: str, content_sha256: str,
                   contents: dict[str, Any]) -> "BuildRecord":
        """The record of a library of ``kind`` compiled for ``target`` by ``compiler``."""
        return cls(kind, name, entry, target.name, tuple(sorted(target.isa_features)), target.vector_bytes,
                   target.threads, tuple(target.flags), compiler, content_sha256, contents)

    def to_json(self) -> str:
        """The record as one line of ASCII JSON."""
        return json.dumps({"format": FORMAT, **asdict(self)}, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, path: Path) -> "BuildRecord":
        """The record :meth:`to_json` wrote, read from library ``path`` (named in errors)."""
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or data.pop("format", None) != FORMAT:
                raise ValueError("not a tesched build record")
            abi = data.get("abi")
            if abi != EXPORT_ABI:
                raise ModuleLoadError(
                    f"{path}: exported by tesched {data.get('tesched_version', '?')} with module ABI {abi}; this "
                    f"tesched {__version__} loads module ABI {EXPORT_ABI}: export it again with this tesched")
            data["features"] = tuple(data["features"])
            data["flags"] = tuple(data["flags"])
            return cls(**data)
        except (ValueError, TypeError, KeyError) as err:
            raise ModuleLoadError(f"{path}: its build record is malformed ({err})") from None


def content_hash(parts: Iterable[str | bytes]) -> str:
    """SHA-256 of ``parts`` (separated, so that no two part lists collide)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()


def read_record(path: Path) -> BuildRecord:
    """The build record of exported library ``path``, read without loading it.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ModuleLoadError
        The file is not a tesched module, its record is damaged, or it follows another module ABI.
    """
    if not path.is_file():
        raise FileNotFoundError(f"no exported tesched library at {path}")
    data = read_section(path, MANIFEST_SECTION)
    if data is None:
        raise ModuleLoadError(f"{path}: not a library exported by tesched (it has no {MANIFEST_SECTION} section)")
    return BuildRecord.from_json(data.rstrip(b"\0").decode("ascii", "replace"), path)


def check_host(record: BuildRecord, path: Path, host: frozenset[str] | None = None) -> None:
    """Refuse a library that needs an instruction-set feature this CPU lacks.

    Parameters
    ----------
    record : BuildRecord
        The library's record.
    path : Path
        The library (named in the error).
    host : frozenset of str, optional
        The CPU's features (default: this machine's, from ``/proc/cpuinfo``). When they cannot be read,
        nothing is refused here: the library's entry point checks the CPU itself before running.

    Raises
    ------
    ModuleLoadError
        Naming the missing features and the target the library was compiled for.
    """
    features = host_features() if host is None else host
    missing = sorted(set(record.features) - features)
    if features and missing:
        raise ModuleLoadError(
            f"{path}: {record.kind} {record.name} was compiled for target {record.target}, which uses "
            f"{', '.join(missing)}; this CPU lacks {'it' if len(missing) == 1 else 'them'}. Export it again "
            "for a target this CPU has (e.g. target='x86-64-avx2' or 'x86-64').")
