"""What the cost model knows of the machine: SIMD lanes, threads, registers, cache capacities.

Read from the host (:mod:`tesched.target` for SIMD width and threads, ``/sys`` for the data caches) or
given explicitly. This module measures nothing and decides nothing.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from tesched.target import get_num_threads, vector_bytes

_CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")
_DEFAULT_CACHES = {1: 32 << 10, 2: 1 << 20, 3: 8 << 20}


@dataclass(frozen=True)
class Machine:
    """The facts the cost model uses.

    Parameters
    ----------
    vector_bytes
        Bytes in one SIMD register.
    threads
        Threads a ``parallel`` loop uses.
    registers
        SIMD registers (32 with AVX-512, 16 otherwise).
    l1_bytes, l2_bytes, l3_bytes
        Data cache capacities per core (L3: shared).
    """

    vector_bytes: int
    threads: int
    registers: int
    l1_bytes: int
    l2_bytes: int
    l3_bytes: int

    def lanes(self, itemsize: int) -> int:
        """SIMD lanes for elements of ``itemsize`` bytes."""
        return max(1, self.vector_bytes // itemsize)

    def describe(self) -> str:
        return (f"{self.vector_bytes * 8}-bit SIMD, {self.registers} vector registers, {self.threads} threads, "
                f"L1 {self.l1_bytes >> 10} KiB, L2 {self.l2_bytes >> 10} KiB, L3 {self.l3_bytes >> 20} MiB")

    def key(self) -> str:
        """A short identifier of the target, recorded with every tuning record."""
        return f"simd{self.vector_bytes * 8}-t{self.threads}-l2_{self.l2_bytes >> 10}k"


def _parse_size(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * scale


@functools.lru_cache(maxsize=None)
def _data_caches() -> dict[int, int]:
    sizes = dict(_DEFAULT_CACHES)
    try:
        for index in sorted(_CACHE_DIR.glob("index*")):
            kind = (index / "type").read_text().strip()
            if kind in ("Data", "Unified"):
                sizes[int((index / "level").read_text())] = _parse_size((index / "size").read_text())
    except (OSError, ValueError):
        pass
    return sizes


def host_machine() -> Machine:
    """The machine this process runs on."""
    width = vector_bytes()
    caches = _data_caches()
    return Machine(width, get_num_threads(), 32 if width == 64 else 16, caches[1], caches[2], caches[3])


def resolve(target: object = None) -> Machine:
    """A :class:`Machine` from ``target``: None or ``"host"`` (this machine), a Machine, or any object
    with ``vector_bytes`` and ``num_threads`` attributes (other facts from the host)."""
    if target is None or target == "host":
        return host_machine()
    if isinstance(target, Machine):
        return target
    width, threads = getattr(target, "vector_bytes", None), getattr(target, "num_threads", None)
    if isinstance(width, int) and isinstance(threads, int):
        base = host_machine()
        return Machine(width, threads, 32 if width == 64 else 16, base.l1_bytes, base.l2_bytes, base.l3_bytes)
    raise TypeError(f"auto_schedule: target must be None, 'host', a Machine or a Target, got {target!r}")
