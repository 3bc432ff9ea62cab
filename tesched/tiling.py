"""Register tiles sized by the target's register file: how many rows x SIMD vectors of accumulators an
outer-product micro-kernel keeps, for every schedule that has one (GEMM, dense panels, convolutions,
Winograd products, the automatic scheduler's cost model).

A micro-kernel step multiplies a broadcast value of each of ``rows`` rows by ``vectors`` vector loads
(the columns) and adds the products to ``rows x vectors`` accumulators. It needs those accumulators, the
``vectors`` loaded operands when more than one row reads them (a vector read once is an operand of its
multiply-add, straight from memory), and a register for the broadcast unless the instruction set embeds
the broadcast in the multiply-add (AVX-512's ``{1toN}`` memory operand). A tile that needs more registers
than the target has spills accumulators to the stack at every step.

Among the tiles that fit, :func:`accumulator_tile` picks the one with the most useful multiply-adds per
cycle under a simple machine model (:data:`FMA_PORTS` multiply-adds and :data:`LOAD_PORTS` loads a
cycle, each accumulator's chain :data:`FMA_LATENCY` cycles long), then the one with most accumulators
(fewest loads per element). Portable C has no SIMD registers: it is tiled as if it had
:data:`PORTABLE_REGISTERS` scalar registers, and a "vectorized" loop of any width counts as one vector (it
is a loop, which the C compiler vectorizes with registers of its own).

This module decides sizes only: it reads a :class:`~tesched.target.Target` and schedules nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from tesched.target import Target, current_target

PORTABLE_REGISTERS = 16
"""Floating-point registers assumed for targets without SIMD registers (x86-64 has 16 xmm, AArch64 32)."""

FMA_PORTS = 2
"""Vector multiply-adds issued per cycle (Haswell and later, Zen 2 and later)."""

LOAD_PORTS = 2
"""Vector loads (or broadcasts from memory) issued per cycle."""

FMA_LATENCY = 4
"""Cycles before a multiply-add's result feeds the next one into the same accumulator."""


@dataclass(frozen=True)
class RegisterFile:
    """What the tilers know of the target: ``registers`` SIMD (or scalar) registers of ``lanes`` elements,
    and whether a multiply-add can read its broadcast operand from memory (``embedded_broadcast``)."""

    registers: int
    lanes: int
    embedded_broadcast: bool

    @classmethod
    def of(cls, target: Target | None = None, dtype: str = "float32") -> "RegisterFile":
        """The register file of ``target`` (the current one by default) for elements of ``dtype``."""
        t = target or current_target()
        return cls(t.vector_registers or PORTABLE_REGISTERS, t.lanes(dtype), t.has("avx512f"))

    def vectors(self, columns: int) -> int:
        """Vector registers ``columns`` contiguous elements take (:func:`vector_chunks`; one without SIMD)."""
        return vector_chunks(columns, self.lanes) if self.lanes > 1 else 1


def vector_chunks(width: int, lanes: int) -> int:
    """SIMD operations tesched's vectorizer emits for ``width`` contiguous elements: full vectors, then
    halves, quarters... down to a quarter vector, then scalars (see :mod:`tesched.transform.vectorize`)."""
    chunks, rest = width // lanes, width % lanes
    part, smallest = lanes // 2, max(2, lanes // 4)
    while rest:
        while part >= smallest and rest < part:
            part //= 2
        step = part if part >= smallest else 1
        rest -= step
        chunks += 1
    return chunks


def registers_needed(rows: int, vectors: int, rf: RegisterFile) -> int:
    """Registers a step of a ``rows`` x ``vectors`` tile holds: accumulators, loaded vectors, broadcast."""
    return rows * vectors + (vectors if rows > 1 else 0) + (0 if rf.embedded_broadcast else 1)


def fits(rows: int, vectors: int, rf: RegisterFile) -> bool:
    """Whether a ``rows`` x ``vectors`` tile keeps its accumulators and operands in ``rf``'s registers."""
    return registers_needed(rows, vectors, rf) <= rf.registers


def useful_fmas_per_cycle(rows: int, columns: int, rf: RegisterFile) -> float:
    """Multiply-adds of full vectors' worth of columns done per cycle by a ``rows`` x ``columns`` tile
    (columns cut into :func:`vector_chunks`; partial vectors count as the lanes they fill)."""
    vectors = rf.vectors(columns)
    cycles = max(rows * vectors / FMA_PORTS, (rows + vectors) / LOAD_PORTS, FMA_LATENCY)
    return rows * columns / rf.lanes / cycles


def _rank(rows: int, columns: int, rf: RegisterFile) -> tuple[float, float, int]:
    vectors = rf.vectors(columns)
    return round(useful_fmas_per_cycle(rows, columns, rf), 6), -(rows + vectors) / (rows * columns), rows * columns


def accumulator_tile(row_options: Iterable[int], column_options: Iterable[int],
                     rf: RegisterFile) -> tuple[int, int]:
    """The best ``(rows, columns)`` tile that fits ``rf`` (see the module doc); when none fits, the one
    needing fewest registers. Options must be positive; columns are elements along the vector axis."""
    candidates = [(r, c) for r in set(row_options) for c in set(column_options)]
    if not candidates:
        raise ValueError("accumulator_tile: no row or column options")
    fitting = [(r, c) for r, c in candidates if fits(r, rf.vectors(c), rf)]
    if not fitting:
        return min(candidates, key=lambda t: (registers_needed(t[0], rf.vectors(t[1]), rf), -t[0] * t[1]))
    return max(fitting, key=lambda t: _rank(t[0], t[1], rf))


def divisors(n: int, at_most: int) -> list[int]:
    """The divisors of ``n`` up to ``at_most``."""
    return [d for d in range(1, min(n, at_most) + 1) if n % d == 0]
