"""Compile the C source of an external library into a shared library, cached on disk.

The user's source is compiled as one translation unit followed by the prototypes tesched declares for
it (see :mod:`.external`), so a definition that disagrees with its declared signature is a compiler error
("conflicting types for 'fn'"), reported with the compiler's own message. ``#line`` directives make those
messages point at the user's lines (``<library source>:12``) and at the declarations
(``<declared signatures>:1``).

The shared library is built with the kernels' flags (``-O3 -march=native -fopenmp``) plus ``-fPIC
-shared`` and the caller's extra flags (after the source, so ``-lfoo`` links a library it calls), in a private temporary directory, then moved into the kernel cache
(``tesched.driver.cache.cache_dir()``) under the SHA-256 of the full text, the flags and the compiler's version,
so a cached library never calls the compiler and concurrent builds are safe. This module knows nothing of
graphs or of cffi; loading the library is :mod:`.external`'s job.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from tesched.driver.cache import cache_dir
from tesched.driver.compiler import LINK_FLAGS, compiler_id
from tesched.target import Target, current_target

SOURCE_FILE = "<library source>"
SIGNATURES_FILE = "<declared signatures>"


class CompileFailure(Exception):
    """The compiler rejected the library; ``messages`` is its error output."""

    def __init__(self, messages: str):
        super().__init__(messages)
        self.messages = messages


def translation_unit(source: str, prototypes: Sequence[str]) -> str:
    """The text compiled: ``<stdint.h>``, the user's source, then the declared prototypes."""
    return "\n".join(["#include <stdint.h>", f'#line 1 "{SOURCE_FILE}"', source,
                      f'#line 1 "{SIGNATURES_FILE}"', *prototypes, ""])


def compile_shared_library(source: str, prototypes: Sequence[str], extra_flags: Sequence[str] = (),
                           target: Target | None = None) -> Path:
    """The path of the shared library built from ``source`` checked against ``prototypes`` for ``target``
    (default: the current one); raises :class:`CompileFailure` with the compiler's messages when it does
    not compile."""
    machine = target or current_target()
    text = translation_unit(source, prototypes)
    flags = [*machine.flags, "-fPIC", "-shared"]
    link = [*extra_flags, *LINK_FLAGS, "-lm"]   # after the source, so that -l options resolve its symbols
    key = hashlib.sha256("\0".join([text, " ".join(flags + link), compiler_id(machine.compiler)]).encode()).hexdigest()
    library = cache_dir() / f"libtesched_external_{key[:24]}.so"
    if library.exists():
        return library
    tmp = Path(tempfile.mkdtemp(prefix="build-external-", dir=cache_dir()))
    try:
        (tmp / "library.c").write_text(text)
        command = [*machine.compiler, *flags, "library.c", "-o", "library.so", *link]
        done = subprocess.run(command, cwd=tmp, capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))
        if done.returncode != 0:
            raise CompileFailure(done.stderr.strip() or done.stdout.strip() or f"{command[0]} failed")
        os.replace(tmp / "library.so", library)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return library
