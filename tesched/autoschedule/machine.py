"""What the cost model knows of the machine: SIMD lanes, threads, registers, cache capacities.

Read from a :class:`~tesched.target.Target` (SIMD width; threads from the target or the OpenMP runtime)
and, for the data caches, from the host's ``/sys`` (a target names no caches), or given explicitly. This
module measures nothing and decides nothing.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from tesched.driver.threads import get_num_threads
from tesched.errors import ScheduleError
from tesched.target import Target, as_target
from tesched.tiling import PORTABLE_REGISTERS, RegisterFile

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
        SIMD registers (the target's: 32 with AVX-512, 16 with AVX2; :data:`tesched.tiling.PORTABLE_REGISTERS`
        without SIMD).
    l1_bytes, l2_bytes, l3_bytes
        Data cache capacities per core (L3: shared).
    target
        The name of the code-generation target (recorded with tuning records).
    """

    vector_bytes: int
    threads: int
    registers: int
    l1_bytes: int
    l2_bytes: int
    l3_bytes: int
    target: str = "host"
    embedded_broadcast: bool = False
    """Whether a multiply-add reads a broadcast operand from memory (AVX-512)."""

    def lanes(self, itemsize: int) -> int:
        """SIMD lanes for elements of ``itemsize`` bytes."""
        return max(1, self.vector_bytes // itemsize)

    def vectorizes(self, row: int, itemsize: int) -> bool:
        """Whether a row of ``row`` elements of ``itemsize`` bytes is worth vectorizing: at least half a vector,
        and never a row of one element (which a target without SIMD would otherwise count as a full vector)."""
        return row >= max(2, self.lanes(itemsize) // 2)

    def register_file(self, itemsize: int) -> RegisterFile:
        """The register file tiles of elements of ``itemsize`` bytes are sized by (see :mod:`tesched.tiling`)."""
        return RegisterFile(self.registers, self.lanes(itemsize), self.embedded_broadcast, itemsize)

    def describe(self) -> str:
        """One line for people: SIMD width, registers, threads and cache sizes."""
        simd = f"{self.vector_bytes * 8}-bit SIMD, {self.registers} vector registers" if self.vector_bytes else \
            f"no SIMD, {self.registers} registers"
        return (f"{simd}, {self.threads} threads, "
                f"L1 {self.l1_bytes >> 10} KiB, L2 {self.l2_bytes >> 10} KiB, L3 {self.l3_bytes >> 20} MiB")

    def key(self) -> str:
        """A short identifier of the target, recorded with every tuning record."""
        return f"{self.target}-simd{self.vector_bytes * 8}-t{self.threads}-l2_{self.l2_bytes >> 10}k"


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


def from_target(target: Target) -> Machine:
    """The machine ``target`` compiles for, with this host's caches."""
    width = target.vector_bytes
    caches = _data_caches()
    threads = target.threads or get_num_threads()
    return Machine(width, threads, target.vector_registers or PORTABLE_REGISTERS, caches[1], caches[2], caches[3],
                   target.name, target.has("avx512f"))


def host_machine() -> Machine:
    """The machine of the current target (``with Target(...)``, ``TESCHED_TARGET``, else this host)."""
    return from_target(as_target(None))


def resolve(target: object = None) -> Machine:
    """A :class:`Machine` from ``target``: None (the current target), a :class:`~tesched.target.Target`
    or its name (``"host"``, ``"x86-64-avx2"``...), or a Machine."""
    if isinstance(target, Machine):
        return target
    if target is None or isinstance(target, (str, Target)):
        chosen = as_target(target)
        if chosen.backend != "c":
            raise ScheduleError(f"{chosen.name} is a GPU target, and the cost model (and tune) knows CPUs only; "
                                "ts.auto_schedule(outputs, target=...) schedules for GPU targets")
        return from_target(chosen)
    raise TypeError(f"auto_schedule: target must be None, a Target, a target name or a Machine, got {target!r}")
