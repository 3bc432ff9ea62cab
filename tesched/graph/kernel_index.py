"""An on-disk index from a fused group to the C of its kernel, so that a graph whose kernels are cached is
built again without lowering them.

Lowering is most of the time of building a graph whose kernels are already compiled (the kernel cache is
keyed by the C, which only lowering produces). After a group's kernel is built with the default
schedules, :func:`remember` writes ``group-<key>.json`` into the kernel cache directory: the kernel's C
(source, cffi declaration, function names) and its signature. The key hashes everything the C depends
on: the group's text and types, the target, the intrinsics' instruction set, the compiler's identity,
the runtime headers, Python's include directory and the text of every source file of tesched (so any
change of the code that lowers forgets every entry). :func:`recall` gives the C back; the module is then
found in the kernel cache (or compiled from that C when it was removed). A recalled kernel has no loop
IR until asked for: :class:`RecalledKernel` lowers the group then. An unreadable or malformed entry is
not an error: the group is lowered and built as if it had none, and its entry written again.

This module reads and writes entries; building is :mod:`tesched.driver`'s.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sysconfig
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from tesched.codegen.c import CSource
from tesched.codegen.signature import Signature
from tesched.config import settings
from tesched.driver.cache import cache_dir
from tesched.driver.compiler import compiler_id, runtime_text
from tesched.driver.kernel import Kernel
from tesched.lower.func import LoweredFunc
from tesched.target import Target

FORMAT = 1
"""The entry format; entries of another are ignored."""

PACKAGE = Path(__file__).resolve().parent.parent


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """SHA-256 of the path and text of every Python, C and header file of the tesched package."""
    h = hashlib.sha256()
    for path in sorted(p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".c", ".h") and p.is_file()):
        h.update(str(path.relative_to(PACKAGE)).encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def group_key(group_text: str, target: Target) -> str:
    """The index key of a group (its schedule choice, types and body as ``group_text``) built for ``target``."""
    parts = [str(FORMAT), group_text, target.key, str(settings().intrin_isa), compiler_id(target.compiler),
             runtime_text(), sysconfig.get_paths()["include"], code_fingerprint()]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def _entry(key: str) -> Path:
    return cache_dir() / f"group-{key}.json"


def recall(key: str) -> tuple[CSource, Signature] | None:
    """The C and signature remembered under ``key``, or None (no entry, or one that cannot be read)."""
    try:
        data = json.loads(_entry(key).read_text())
        if data.get("format") != FORMAT:
            return None
        src = CSource(str(data["name"]), str(data["source"]), str(data["declaration"]), argv=str(data["argv"]))
        return src, Signature.from_json(data["signature"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def remember(key: str, kernel: Kernel, src_name: str, declaration: str, argv: str) -> None:
    """Write the entry of ``kernel`` under ``key`` (atomically; a cache that cannot be written is skipped)."""
    record = {"format": FORMAT, "name": src_name, "source": kernel.c_source, "declaration": declaration,
              "argv": argv, "signature": kernel.signature.to_json()}
    path = _entry(key)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        tmp.write_text(json.dumps(record))
        os.replace(tmp, path)


class RecalledKernel(Kernel):
    """A kernel built from a remembered entry: its loop IR (``lowered``) is made when first read."""

    _lowered: LoweredFunc | None = None

    def __init__(self, src: CSource, module: ModuleType, signature: Signature, lower: Callable[[], LoweredFunc]):
        self._lower: Callable[[], LoweredFunc] | None = lower
        super().__init__(None, src, module, signature)

    @property
    def lowered(self) -> LoweredFunc | None:
        if self._lowered is None and self._lower is not None:
            self._lowered, self._lower = self._lower(), None
        return self._lowered

    @lowered.setter
    def lowered(self, value: Any) -> None:
        self._lowered = value
