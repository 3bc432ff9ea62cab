"""The on-disk cache of compiled kernels: where it is, how entries are keyed, stored, verified and managed.

A kernel's key is the SHA-256 of its C source and declaration, the target (features, flags, compiler),
the compiler's version line, the runtime header, tesched's version and the Python ABI. An entry is the
compiled module ``<name><EXT_SUFFIX>`` and, beside it, ``<name><EXT_SUFFIX>.sha256`` holding the SHA-256
of the module's bytes. Entries are built in a private ``build-*`` directory and moved into place with
``os.replace`` (module first, checksum last), so concurrent builds of one kernel are safe. A module is
loaded only after its bytes match its checksum; an entry that does not (truncated, empty, random bytes,
a directory, another kernel's module, a build killed before the checksum was written) is removed and
rebuilt, never ``dlopen``-ed. ``build-*`` directories older than an hour (left by killed builds) are
removed when the cache is first used in a process. If the cache directory cannot be created or written,
a per-process temporary directory is used instead, with one warning.

The directory is ``TESCHED_CACHE_DIR``, else the user cache directory (see :mod:`tesched.config`). This
module does not compile or load; :mod:`.compiler` does.
"""
from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import sysconfig
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

from tesched.config import settings

STALE_BUILD_SECONDS = 3600
CHECKSUM_SUFFIX = ".sha256"
_ELF_MAGIC = b"\x7fELF"

T = TypeVar("T")
_usable: dict[Path, Path] = {}      # configured directory -> directory actually used


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, prefix=".probe-", delete=True)
        probe.close()
        return True
    except OSError:
        return False


def _remove_stale_builds(path: Path) -> None:
    now = time.time()
    for build in path.glob("build-*"):
        try:
            if now - build.stat().st_mtime > STALE_BUILD_SECONDS:
                shutil.rmtree(build, ignore_errors=True)
        except OSError:
            pass


def cache_dir() -> Path:
    """The cache directory (created if needed; a temporary one if the configured one is unusable)."""
    configured = settings().cache_dir
    if configured not in _usable:
        if _writable(configured):
            _remove_stale_builds(configured)
            _usable[configured] = configured
        else:
            fallback = Path(tempfile.mkdtemp(prefix="tesched-cache-"))
            atexit.register(shutil.rmtree, fallback, True)
            warnings.warn(f"tesched: the kernel cache directory {configured} cannot be written; using "
                          f"{fallback} for this process (set TESCHED_CACHE_DIR to a writable directory)",
                          RuntimeWarning, stacklevel=2)
            _usable[configured] = fallback
    return _usable[configured]


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


def checksum_path(path: Path) -> Path:
    return path.with_name(path.name + CHECKSUM_SUFFIX)


def _digest(data: bytes, name: str) -> str:
    """The checksum of a module: its file name (so another kernel's module never passes) and bytes."""
    return hashlib.sha256(name.encode() + b"\0" + data).hexdigest()


def entry_problem(path: Path) -> str | None:
    """Why the entry at ``path`` must not be loaded, or None if its bytes match its checksum."""
    try:
        if not path.is_file():
            return "not a regular file" if path.exists() else "missing"
        with open(path, "rb") as f:
            if f.read(4) != _ELF_MAGIC:
                return "not an ELF shared object"
        recorded = checksum_path(path).read_text().strip() if checksum_path(path).is_file() else None
        if recorded is None:
            return "no checksum (an interrupted build)"
        if recorded != _digest(path.read_bytes(), path.name):
            return "checksum mismatch (damaged or replaced)"
    except OSError as err:
        return f"unreadable ({err.strerror})"
    return None


def remove_entry(path: Path) -> None:
    """Delete an entry (module and checksum), whatever the module is (a file or a directory)."""
    for p in (path, checksum_path(path)):
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            try:
                p.unlink()
            except FileNotFoundError:
                pass


def store(path: Path, build: Callable[[str], str], check: Callable[[str], T]) -> T:
    """Run ``build(tmpdir)`` (which returns the file it made) in a private directory, then ``check(file)``
    (which raises if the file is unusable; its result is returned), and move the file and its checksum to
    ``path`` atomically. Nothing reaches the cache if ``build`` or ``check`` raises."""
    tmp = tempfile.mkdtemp(prefix="build-", dir=cache_dir())
    try:
        built = build(tmp)
        result = check(built)
        digest = _digest(Path(built).read_bytes(), path.name)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        os.replace(built, path)
        checksum_tmp = Path(tmp) / "checksum"
        checksum_tmp.write_text(digest + "\n")
        os.replace(checksum_tmp, checksum_path(path))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return result


@dataclass(frozen=True)
class Entry:
    """One cached module: its path, size in bytes, age in seconds, and why it is bad (None if good)."""

    path: Path
    size: int
    age: float
    problem: str | None


def entries(verify: bool = False) -> list[Entry]:
    """The cached kernel modules (``_tesched_*``), checked against their checksums if ``verify``."""
    now, out = time.time(), []
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    for path in sorted(cache_dir().glob(f"_tesched_*{suffix}")):
        try:
            stat = path.stat()
        except OSError:
            continue
        out.append(Entry(path, stat.st_size, now - stat.st_mtime, entry_problem(path) if verify else None))
    return out


def clear() -> int:
    """Remove every cached kernel, helper, external library, identifier list, precompiled header and build
    directory; the count."""
    removed = 0
    root = cache_dir()
    for path in list(root.iterdir()):
        if path.name.startswith(("_tesched_", "helper-", "libtesched_external_", "reserved-", "system-", "build-",
                                 "pch-")):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            removed += not path.name.endswith(CHECKSUM_SUFFIX)
    return removed
