"""Registers for a block-level buffer each of whose elements only one thread touches: a register tile.

A stage made for registers (``cache_write(C, "local")``) but computed at a block loop, with its loops and
its readers' loops bound to thread indices, is allocated per block (its region spans the block's
threads), yet each element belongs to one thread. This module proves that and gives each thread the
private array of its own elements, so that the accumulators of a GEMM's register tile live across the
serial reduction loop (which stages shared tiles between barriers) outside the thread loops.

The proof: every access is a ``Load``/``Store`` under thread loops that each run at most one iteration per
thread (trip count <= the block's size along their index), so a loop ``v`` bound to index ``t`` takes the
value ``begin + t``. With that substituted, each dimension's index minus the region's origin must be
``c * t + rest`` for one index ``t`` (or none) and one stride ``c`` shared by all accesses, with
``0 <= rest < c`` (``rest`` bounded by the loop ranges, those of the loops around the buffer's allocation
included, and simplified under them), every access must be under loops bound to the same indices, and
each of those indices must move some dimension (else its threads share the element). A thread's element
along that dimension is then ``rest``: the private array has extent ``c`` there. Along a dimension no
thread index moves, the private array has the region's extent, and nothing is to prove: the region is
the box of every access (lowering allocates it so), whatever form isl gave the access's index (a fused
loop's coordinates are often written as convoluted divisions that bounds cannot compare with the
origin's); an extent of one is index 0. Anything else is refused with
the reason, and the buffer stays where it is. It prints nothing (:mod:`tesched.codegen.gpu`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from tesched.arith.interval import VarRanges, bound
from tesched.arith.linear import coefficient
from tesched.arith.simplify import simplify
from tesched.codegen.gpu_launch import most_trips
from tesched.ir import nodes as ir
from tesched.ir.visitor import child_fields, map_stmt
from tesched.te.expr import BinOp, Binary, Const, Expr, Var
from tesched.te.visit import rewrite, structural_key, substitute, walk


class NotPrivate(Exception):
    """Why a buffer's elements cannot be given to the threads as registers."""


@dataclass
class _Context:
    values: dict[Var, Expr] = field(default_factory=dict)   # thread loop vars (begin + index) and lets
    ranges: VarRanges = field(default_factory=VarRanges)
    tags: frozenset[str] = frozenset()                       # the thread indices of the loops around


class _Privatizer:
    def __init__(self, buffer: ir.Buffer, sizes: dict[str, int]):
        self.buffer, self.sizes = buffer, sizes
        self.tag_vars: dict[str, Var] = {}
        self.dims: list[tuple[str, int]] | None = None    # per dimension: (thread index or "", private extent)
        self.tags: frozenset[str] | None = None
        self.rests: dict[int, tuple] = {}                         # id(access) -> the private indices
        self.keys: dict[int, tuple] = {}

    def visit(self, s: ir.Stmt, ctx: _Context) -> None:
        if isinstance(s, ir.For):
            if s.thread.startswith("threadIdx"):
                most = most_trips(s)
                if most is None or most > self.sizes.get(s.thread, 1):
                    raise NotPrivate(f"loop {s.var.name} bound to {s.thread} runs more than one iteration per thread")
                index = self.tag_vars.setdefault(s.thread, Var(s.thread, "int64"))
                begin = substitute(s.begin, ctx.values)
                ctx = replace(ctx, values={**ctx.values, s.var: simplify(Binary(BinOp.ADD, begin, index, "int64"))},
                              tags=ctx.tags | {s.thread},
                              ranges=ctx.ranges.where(index, 0, self.sizes.get(s.thread, 1) - 1))
            low = bound(substitute(s.begin, ctx.values), ctx.ranges)[0]
            high = bound(substitute(s.end, ctx.values), ctx.ranges)[1] - 1
            ctx = replace(ctx, ranges=ctx.ranges.where(s.var, low, high))
        elif isinstance(s, ir.LetStmt):
            ctx = replace(ctx, values={**ctx.values, s.var: substitute(s.value, ctx.values)})
        elif isinstance(s, ir.Store) and s.buffer is self.buffer:
            self.access(s, s.indices, ctx)
        for value in vars(s).values():
            for e in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(e, Expr):
                    for node in walk(e):
                        if getattr(node, "buffer", None) is self.buffer:
                            if not isinstance(node, ir.Load):
                                raise NotPrivate(f"it is accessed by a {type(node).__name__}")
                            self.access(node, node.indices, ctx)
        for _, value in child_fields(s):
            for child in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(child, ir.Stmt):
                    self.visit(child, ctx)

    def access(self, node: ir.Load | ir.Store, indices: tuple, ctx: _Context) -> None:
        b = self.buffer
        if len(indices) != len(b.shape) or ir.is_flat(b, indices) or b.folds or not b.row_major:
            raise NotPrivate("an access is not one index per dimension of a plain region")
        if self.tags is None:
            self.tags = ctx.tags
        if ctx.tags != self.tags or not ctx.tags:
            raise NotPrivate("its accesses are not all under loops bound to the same thread indices")
        dims, rests = [], []
        for d, (idx, off) in enumerate(zip(indices, b.offsets)):
            e = simplify(substitute(Binary(BinOp.SUB, idx, off, "int64"), ctx.values), ctx.ranges)
            moved = [(tag, coefficient(e, var)) for tag, var in self.tag_vars.items() if tag in ctx.tags]
            strides = [(tag, c) for tag, c in moved if c is not None and c > 0]
            if len(strides) > 1 or any(c is None or c < 0 for _, c in moved):
                raise NotPrivate(f"its index along dimension {d} is not stride * thread index + rest")
            rest = simplify(substitute(e, {self.tag_vars[t]: Const(0, "int64") for t in ctx.tags}), ctx.ranges)
            extent = strides[0][1] if strides else b.shape[d]
            if not isinstance(extent, int):
                raise NotPrivate(f"its region has no constant extent along dimension {d}")
            if not strides and extent == 1:
                rest = Const(0, "int64")        # the region's box holds every access (its origin is their least)
            low, high = bound(rest, ctx.ranges)
            if strides and not (low >= 0 and high < extent):
                raise NotPrivate(f"along dimension {d} a thread's elements are not within one stride of its index")
            dims.append((strides[0][0] if strides else "", extent))
            rests.append(rest)
        if not ctx.tags <= {tag for tag, _ in dims}:
            raise NotPrivate("threads of a loop around an access share its element")
        if self.dims is None:
            self.dims = dims
        if dims != self.dims:
            raise NotPrivate("its accesses map elements to threads differently")
        key = tuple(structural_key(r) for r in rests)
        if self.keys.setdefault(id(node), key) != key:
            raise NotPrivate("one access node is reached in two contexts")
        self.rests[id(node)] = tuple(rests)


def privatize(alloc: ir.Allocate, sizes: dict[str, int], ranges: VarRanges | None = None) -> ir.Allocate:
    """``alloc`` with its buffer replaced by the per-thread array of each thread's elements (``sizes``: the
    block's threads along each index; ``ranges``: of the loops around ``alloc``); :class:`NotPrivate` says
    why not."""
    p = _Privatizer(alloc.buffer, sizes)
    p.visit(alloc.body, _Context(ranges=ranges or VarRanges()))
    if p.dims is None:
        raise NotPrivate("nothing accesses it")
    b = alloc.buffer
    private = ir.Buffer(b.name, [extent for _, extent in p.dims], b.dtype, ir.BufferScope.LOCAL)

    def rests(node: object) -> tuple:
        if id(node) not in p.rests:
            raise NotPrivate(f"an access sits where the analysis did not look ({type(node).__name__})")
        return p.rests[id(node)]

    def load(e: Expr) -> Expr | None:
        return ir.Load(private, rests(e)) if isinstance(e, ir.Load) and e.buffer is b else None

    def store(s: ir.Stmt) -> ir.Stmt | None:
        if isinstance(s, ir.Store) and s.buffer is b:
            return ir.Store(private, rests(s), rewrite(s.value, load))
        return None

    return ir.Allocate(private, map_stmt(alloc.body, lambda e: rewrite(e, load), store))
