"""Launch geometry of GPU kernels: which loops a kernel binds to each GPU index, how many blocks and
threads that gives, and the limits a block's threads must keep.

The geometry along each index is the largest trip count of the loops bound to it: an expression of the
size parameters, or the constant bound the lowering knows (:class:`Launch`, evaluated by the host when it
runs). A block's thread counts must be constants within the target's limit. It prints nothing
(:mod:`tesched.codegen.gpu`) and runs nothing (:mod:`tesched.driver.gpu`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from tesched.arith.interval import INF, VarRanges, bound
from tesched.arith.simplify import simplify
from tesched.errors import ScheduleError
from tesched.ir import nodes as ir
from tesched.ir.visitor import walk_stmts
from tesched.target import Target
from tesched.te.expr import BinOp, Binary, Const, Expr, Var
from tesched.te.visit import walk


@dataclass
class Launch:
    """One kernel and its launch geometry: per GPU index tag, the trip counts of the loops bound to it
    (ints or expressions of the size parameters); the launch takes the largest."""

    name: str
    extents: dict[str, list[Expr]] = field(default_factory=dict)
    shared_bytes: int = 0

    def geometry(self, evaluate: Callable[[Expr], int]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """``(blocks, threads)`` along x, y, z, given the value of a size expression."""
        def size(tag: str) -> int:
            return max([max(evaluate(e), 1) for e in self.extents.get(tag, [])], default=1)
        return ((size("blockIdx.x"), size("blockIdx.y"), size("blockIdx.z")),
                (size("threadIdx.x"), size("threadIdx.y"), size("threadIdx.z")))


@dataclass
class GpuSource:
    """Generated GPU code: its ``source``, its dialect, the kernels in launch order and the intermediate
    tensors the host allocates in device memory (``scratch``)."""

    source: str
    dialect: str
    kernels: list[Launch]
    scratch: list[ir.Buffer]


def trip_count(loop: ir.For, params: Sequence[Var]) -> Expr:
    """The trip count of a bound loop as an expression of the size ``params`` (or its constant bound)."""
    trips = simplify(Binary(BinOp.SUB, loop.end, loop.begin, "int64"))
    ids = {id(p) for p in params}
    if all(id(v) in ids for v in walk(trips) if isinstance(v, Var)):
        return trips
    most = most_trips(loop)
    if most is not None:
        return Const(most, "int64")
    raise ScheduleError(f"loop {loop.var.name} of stage {loop.stage} is bound to {loop.thread}, but its trip count "
                        f"{trips!r} depends on the loops around it and has no constant bound: split it by a "
                        "constant factor and bind the inner loop")


def most_trips(loop: ir.For) -> int | None:
    """The largest trip count of ``loop`` when a constant bounds it: the lowering's hint, or the bound of a
    clamped tile's ``min()`` the hint did not look into, the smaller."""
    trips = simplify(Binary(BinOp.SUB, loop.end, loop.begin, "int64"))
    if isinstance(trips, Const):
        return int(trips.value)
    most = [n for n in (loop.extent_hint, _upper(trips)) if n is not None and n != INF]
    return int(min(most)) if most else None


def _upper(e: Expr) -> float:
    """An upper bound of ``e``, with ``min(a, b) - c`` read as ``min(a - c, b - c)`` (a clamped tile's
    trip count, whose terms cancel in one branch)."""
    if isinstance(e, Binary) and e.op == BinOp.SUB and isinstance(e.a, Binary) and e.a.op == BinOp.MIN:
        return min(_upper(simplify(Binary(BinOp.SUB, x, e.b, e.dtype))) for x in (e.a.a, e.a.b))
    return bound(e, VarRanges())[1]


def launch_of(name: str, kernel: ir.Stmt, params: Sequence[Var]) -> Launch:
    """The launch of the kernel ``kernel``: the trip counts of its bound loops per GPU index."""
    launch = Launch(name)
    for loop in walk_stmts(kernel):
        if isinstance(loop, ir.For) and loop.thread:
            launch.extents.setdefault(loop.thread, []).append(trip_count(loop, params))
    return launch


def thread_sizes(launch: Launch, kernel: ir.Stmt, target: Target) -> dict[str, int]:
    """Threads per block along each ``threadIdx`` index; a :class:`ScheduleError` when one is symbolic or
    the block has more threads than ``target`` allows."""
    sizes: dict[str, int] = {}
    for d in "xyz":
        extents = launch.extents.get(f"threadIdx.{d}", [])
        if any(not isinstance(e, Const) for e in extents):
            raise ScheduleError(f"{launch.name}: the loops bound to threadIdx.{d} have a symbolic trip count "
                                "(a block's size must be known when compiling): split them by a constant factor")
        sizes[f"threadIdx.{d}"] = max([int(e.value) for e in extents if isinstance(e, Const)], default=1)
    total = sizes["threadIdx.x"] * sizes["threadIdx.y"] * sizes["threadIdx.z"]
    if total > target.gpu_max_threads:
        loops = ", ".join(f"{tag}: {max(int(e.value) for e in es if isinstance(e, Const))}"
                          for tag, es in launch.extents.items() if tag.startswith("thread"))
        stages = ", ".join(dict.fromkeys(f.stage for f in walk_stmts(kernel) if isinstance(f, ir.For) and f.thread))
        raise ScheduleError(f"{launch.name} (stages {stages}): {total} threads per block ({loops}) "
                            f"but {target.name} allows {target.gpu_max_threads}; use smaller thread tiles")
    return sizes
