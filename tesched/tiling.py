"""Register tiles sized by the target's register file: how many rows x SIMD vectors of accumulators an
outer-product micro-kernel keeps, for every schedule that has one (GEMM, dense panels, convolutions,
Winograd products, the automatic scheduler's cost model).

A micro-kernel step multiplies a broadcast value of each of ``rows`` rows by ``vectors`` vector loads
(the columns) and adds the products to ``rows x vectors`` accumulators. What it costs is counted as gcc
(12) compiles tesched's tiles, measured on its assembly for 16 and 32 SIMD registers:

- the column vectors are loaded once per step and kept in registers only when enough rows read them
  (:meth:`RegisterFile.folds`): with at most 2 rows (16 registers) or 3 rows (32 registers) gcc makes
  each load a memory operand of its multiply-add and reloads every vector for every row;
- the broadcast takes a register, except with one column vector on AVX-512, where gcc embeds it in the
  multiply-add (``{1toN}``);
- a tile that needs more registers than the target has spills to the stack at every step.

Among the tiles that fit, :func:`accumulator_tile` picks the one with the most useful multiply-adds per
cycle under a simple machine model (:data:`FMA_PORTS` multiply-adds and :data:`LOAD_PORTS` loads a
cycle, each accumulator's chain :data:`FMA_LATENCY` cycles long, and the column operand streamed from
the L2 cache at :data:`L2_BYTES_PER_CYCLE`: a tile reads new columns at every step of its reduction, and
the columns of a whole reduction rarely stay in L1 while the loops around the tile move on), then the
one with fewest loads per element. Over a given extent of rows, a row count that does not divide it
leaves a partial last tile, counted at its own rate. Portable C has no SIMD registers: it is tiled as if
it had :data:`PORTABLE_REGISTERS` scalar registers, and a "vectorized" loop of any width counts as one
vector (it is a loop, which the C compiler vectorizes with registers of its own).

This module decides sizes only: it reads a :class:`~tesched.target.Target` and schedules nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from tesched.target import Target, current_target

PORTABLE_REGISTERS = 16
"""Floating-point registers assumed for targets without SIMD registers (x86-64 has 16 xmm, AArch64 32)."""

FMA_PORTS = 2
"""Vector multiply-adds issued per cycle (Haswell and later, Zen 2 and later)."""

LOAD_PORTS = 2
"""Vector loads (or broadcasts from memory) issued per cycle."""

FMA_LATENCY = 4
"""Cycles before a multiply-add's result feeds the next one into the same accumulator."""

L2_BYTES_PER_CYCLE = 32
"""Bytes a core reads from its L2 cache per cycle, sustained (half the 64-byte peak of Haswell to
Sapphire Rapids)."""


@dataclass(frozen=True)
class RegisterFile:
    """What the tilers know of the target: ``registers`` SIMD (or scalar) registers of ``lanes`` elements
    of ``itemsize`` bytes, and whether a multiply-add can read its broadcast operand from memory
    (``embedded_broadcast``)."""

    registers: int
    lanes: int
    embedded_broadcast: bool
    itemsize: int = 4

    @classmethod
    def of(cls, target: Target | None = None, dtype: str = "float32") -> "RegisterFile":
        """The register file of ``target`` (the current one by default) for elements of ``dtype``."""
        t = target or current_target()
        return cls(t.vector_registers or PORTABLE_REGISTERS, t.lanes(dtype), t.has("avx512f"),
                   np.dtype(dtype).itemsize)

    def folds(self, rows: int) -> bool:
        """Whether gcc reads each column vector from memory at every multiply-add of a tile of ``rows``
        rows (rather than loading it once into a register): at most 2 rows with 16 registers, 3 with 32."""
        return rows <= self.registers // 16 + 1

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


def registers_needed(rows: int, vectors: int, rf: RegisterFile, shared: bool = True) -> int:
    """Registers a step of a ``rows`` x ``vectors`` tile holds: accumulators, the column vectors unless gcc
    folds them into the multiply-adds, and the broadcast unless it is embedded (see the module doc).
    ``shared``: whether the rows read the same column vectors (an outer product); rows that each read
    their own (a depthwise convolution's rows of the image) keep none in registers."""
    folded = rf.folds(rows) or not shared
    embedded = rf.embedded_broadcast and vectors == 1 and not folded
    return rows * vectors + (0 if folded else vectors) + (0 if embedded else 1)


def loads_per_step(rows: int, vectors: int, rf: RegisterFile) -> int:
    """Loads a step of a ``rows`` x ``vectors`` tile issues: a broadcast per row, and the column vectors
    once, or once per row when gcc folds them into the multiply-adds."""
    return rows + (rows * vectors if rf.folds(rows) else vectors)


def fits(rows: int, vectors: int, rf: RegisterFile, shared: bool = True) -> bool:
    """Whether a ``rows`` x ``vectors`` tile keeps its accumulators and operands in ``rf``'s registers
    (``shared`` as in :func:`registers_needed`)."""
    return registers_needed(rows, vectors, rf, shared) <= rf.registers


def step_cycles(rows: int, columns: int, rf: RegisterFile) -> float:
    """Cycles a step of a ``rows`` x ``columns`` tile takes under the module doc's machine model."""
    vectors = rf.vectors(columns)
    return max(rows * vectors / FMA_PORTS, loads_per_step(rows, vectors, rf) / LOAD_PORTS, FMA_LATENCY,
               columns * rf.itemsize / L2_BYTES_PER_CYCLE)


def useful_fmas_per_cycle(rows: int, columns: int, rf: RegisterFile, extent: int | None = None) -> float:
    """Multiply-adds of full vectors' worth of columns done per cycle by a ``rows`` x ``columns`` tile
    (columns cut into :func:`vector_chunks`; partial vectors count as the lanes they fill); over ``extent``
    rows when given, the partial last tile (when ``rows`` does not divide it) at its own rate."""
    if extent is None or extent % rows == 0:
        return rows * columns / rf.lanes / step_cycles(rows, columns, rf)
    last = extent % rows
    cycles = extent // rows * step_cycles(rows, columns, rf) + step_cycles(last, columns, rf)
    return extent * columns / rf.lanes / cycles


def _rank(rows: int, columns: int, rf: RegisterFile, extent: int | None) -> tuple[float, float, int]:
    loads = loads_per_step(rows, rf.vectors(columns), rf)
    return round(useful_fmas_per_cycle(rows, columns, rf, extent), 6), -loads / (rows * columns), rows * columns


def accumulator_tile(row_options: Iterable[int], column_options: Iterable[int], rf: RegisterFile,
                     extent: int | None = None) -> tuple[int, int]:
    """The best ``(rows, columns)`` tile that fits ``rf`` (see the module doc); when none fits, the one
    needing fewest registers. Options must be positive; columns are elements along the vector axis.
    ``extent``: the rows the tiles cover, when row options may leave a partial last tile."""
    candidates = [(r, c) for r in set(row_options) for c in set(column_options)]
    if not candidates:
        raise ValueError("accumulator_tile: no row or column options")
    fitting = [(r, c) for r, c in candidates if fits(r, rf.vectors(c), rf)]
    if not fitting:
        return min(candidates, key=lambda t: (registers_needed(t[0], rf.vectors(t[1]), rf), -t[0] * t[1]))
    return max(fitting, key=lambda t: _rank(t[0], t[1], rf, extent))


def divisors(n: int, at_most: int) -> list[int]:
    """The divisors of ``n`` up to ``at_most``."""
    return [d for d in range(1, min(n, at_most) + 1) if n % d == 0]
