"""``python -m tesched cache info|clear|verify``: look at and manage the compiled-kernel cache.

``info`` prints the directory, the number of kernels, their total size and the age of the oldest and
newest; ``verify`` checks every kernel against its checksum and removes the bad ones (they are rebuilt
when next needed); ``clear`` removes every kernel, external library and build leftover. The cache itself
is :mod:`tesched.driver.cache`.
"""
from __future__ import annotations

from typing import Callable

from tesched.driver import cache


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _age(seconds: float) -> str:
    for unit, span in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= span:
            return f"{seconds / span:.1f} {unit}"
    return f"{seconds:.0f} s"


def info(write: Callable[[str], None] = print) -> int:
    """Print where the cache is and what it holds."""
    found = cache.entries()
    write(f"cache directory: {cache.cache_dir()}")
    write(f"kernels: {len(found)}, {_size(sum(e.size for e in found))}")
    if found:
        write(f"oldest: {_age(max(e.age for e in found))} ago, newest: {_age(min(e.age for e in found))} ago")
    return 0


def verify(write: Callable[[str], None] = print) -> int:
    """Check every kernel against its checksum; remove the bad ones. Returns 0 (bad entries are fixed)."""
    found = cache.entries(verify=True)
    bad = [e for e in found if e.problem is not None]
    for entry in bad:
        write(f"removed {entry.path.name}: {entry.problem}")
        cache.remove_entry(entry.path)
    write(f"verified {len(found)} kernels: {len(found) - len(bad)} good, {len(bad)} removed")
    return 0


def clear(write: Callable[[str], None] = print) -> int:
    """Remove everything tesched put in the cache."""
    write(f"removed {cache.clear()} entries from {cache.cache_dir()}")
    return 0


COMMANDS: dict[str, Callable[..., int]] = {"info": info, "verify": verify, "clear": clear}
