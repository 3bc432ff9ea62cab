"""The on-disk cache of compiled kernels: where it is, and how entries are keyed, stored and found.

A kernel's key is the SHA-256 of its C source and declaration, the target (features, flags, compiler),
the compiler's version line, the runtime header, tesched's version and the Python ABI. Entries are built in
a private temporary directory and moved into place with ``os.replace``, so concurrent builds of one
kernel are safe and a cached kernel never runs the compiler. The directory is ``TESCHED_CACHE_DIR``, else
the user cache directory (see :mod:`tesched.config`).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sysconfig
import tempfile
from pathlib import Path
from typing import Callable

from tesched.config import settings


def cache_dir() -> Path:
    """The cache directory (created if needed)."""
    path = settings().cache_dir
    path.mkdir(parents=True, exist_ok=True)
    return path


def entry_key(*parts: str) -> str:
    """The SHA-256 of ``parts`` (separated, so that no two part lists collide)."""
    h = hashlib.sha256()
    for part in (*parts, sysconfig.get_config_var("EXT_SUFFIX") or ""):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def module_path(module_name: str) -> Path:
    """Where the extension module ``module_name`` lives in the cache."""
    return cache_dir() / f"{module_name}{sysconfig.get_config_var('EXT_SUFFIX')}"


def store(path: Path, build: Callable[[str], str]) -> None:
    """Run ``build(tmpdir)`` (which returns the file it made) in a private directory and move its result
    to ``path`` atomically."""
    tmp = tempfile.mkdtemp(prefix="build-", dir=cache_dir())
    try:
        built = build(tmp)
        os.replace(built, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
