"""Which lines of the generated C each loop of the lowered IR became.

Every ``For`` of the lowered function is wrapped in a :class:`LoopSpan` marker, the marked function is
finished for the target exactly as ``build`` does (machine passes, then the profiling timers when the
kernel has them) and printed by the C generator, which records the lines each marker encloses. The
machine passes rebuild statements field by field, so a marker stays around whatever its loop became: the
loop itself, the copies of an unrolled body, or the SIMD code of a vectorized loop. The source printed
this way is compared with the kernel's: if a marker changed what a pass did, the lines are not used.
Loops inside a vectorized or unrolled loop are not marked: they get the lines of that loop, which they
became part of.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from tesched.codegen.c import CodeGen, CSource
from tesched.driver.compiler import reserved_identifiers
from tesched.ir import nodes as ir
from tesched.ir.visitor import child_fields, map_stmt, walk_stmts
from tesched.lower.func import LoweredFunc
from tesched.lower.pipeline import lower_for_target
from tesched.ir.kinds import LoopKind
from tesched.target import Target
from tesched.transform.profile import instrument


@dataclass(eq=False)
class LoopSpan(ir.Stmt):
    """Marks the C lines that loop number ``loop`` of the lowered IR becomes."""

    loop: int
    body: ir.Stmt


class _SpanCodeGen(CodeGen):
    """The C generator, recording the lines (0-based, within the function body) of each marker."""

    def __init__(self, func: LoweredFunc, reserved: frozenset[str], target: Target):
        super().__init__(func, reserved, target)
        self.spans: dict[int, list[tuple[int, int]]] = {}

    def visit_LoopSpan(self, s: LoopSpan) -> None:
        start = len(self.lines)
        self.visit(s.body)
        if len(self.lines) > start:
            self.spans.setdefault(s.loop, []).append((start, len(self.lines) - 1))


def numbered_loops(body: ir.Stmt) -> list[ir.For]:
    """The loops of ``body`` in pre-order: loop ``k`` of a page is ``numbered_loops(body)[k]``."""
    return [s for s in walk_stmts(body) if isinstance(s, ir.For)]


def _mark(body: ir.Stmt, number: dict[int, int]) -> ir.Stmt:
    def on_stmt(s: ir.Stmt) -> ir.Stmt | None:
        if not isinstance(s, ir.For):
            return None
        if s.kind in (LoopKind.VECTORIZED, LoopKind.UNROLLED):
            return LoopSpan(number[id(s)], s)
        return LoopSpan(number[id(s)], replace(s, body=_mark(s.body, number)))
    return map_stmt(body, None, on_stmt)


def _children(s: ir.Stmt) -> list[ir.Stmt]:
    """The statements directly inside ``s``."""
    return [item for _, value in child_fields(s) for item in (value if isinstance(value, (list, tuple)) else (value,))
            if isinstance(item, ir.Stmt)]


def _enclosing(body: ir.Stmt, number: dict[int, int]) -> dict[int, int]:
    """Per loop number, the number of the loop directly around it (outermost loops are absent)."""
    out: dict[int, int] = {}

    def visit(s: ir.Stmt, around: int | None) -> None:
        if isinstance(s, ir.For):
            if around is not None:
                out[number[id(s)]] = around
            around = number[id(s)]
        for child in _children(s):
            visit(child, around)

    visit(body, None)
    return out


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def c_lines(func: LoweredFunc, target: Target, profiled: bool = False,
            expected: str | None = None) -> tuple[CSource, dict[int, list[tuple[int, int]]] | None]:
    """The C of ``func`` for ``target`` and, per loop number, the 1-based line ranges of that C it became.

    Parameters
    ----------
    func : LoweredFunc
        What ``lower()`` returned (its loops are numbered by :func:`numbered_loops`).
    target : Target
        The target it is (or would be) built for.
    profiled : bool
        Whether the kernel was built with ``profile=True``.
    expected : str, optional
        The kernel's C source: when given and the marked build differs from it, it is returned with no
        line ranges.

    Returns
    -------
    tuple of (CSource, dict or None)
        The C (the kernel's when ``expected`` is given) and the line ranges, or None when unavailable.
    """
    number = {id(loop): k for k, loop in enumerate(numbered_loops(func.body))}
    finished = lower_for_target(replace(func, body=_mark(func.body, number)), target)
    if profiled:
        timed, _ = instrument(finished.body, finished.name)
        finished = replace(finished, body=timed)
    gen = _SpanCodeGen(finished, reserved_identifiers(target), target)
    src = gen.function()
    if expected is not None and src.source != expected:
        return CSource(src.name, expected, src.declaration, src.profile), None
    # the recorded lines follow the body's first line, which declares the status variable
    first = src.source.split("\n").index(f"  int {gen.status} = 0;") + 1
    spans = {k: [(a + first + 1, b + first + 1) for a, b in _merge(r)] for k, r in gen.spans.items()}
    parent = _enclosing(func.body, number)
    for k in range(len(number)):
        outer = k
        while outer not in spans and outer in parent:
            outer = parent[outer]
        if outer in spans and k not in spans:
            spans[k] = spans[outer]
    return src, spans
