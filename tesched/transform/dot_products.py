"""Vectorize narrow dot-product reductions into AVX-512 VNNI / BF16 instructions or their portable forms.

The pattern is a ``vectorized`` loop over ``v`` whose body is one short serial loop over ``t`` (4 steps for
8-bit integers, 2 for bfloat16) accumulating products of two narrow loads into a 32-bit element:

    for v (vectorized):  for t in [0, G):  acc[.., v] = acc[.., v] + wide(x[..]) * wide(w[..])

where ``acc`` moves by 1 with ``v`` and not with ``t``, one operand reads ``G`` consecutive elements that
do not move with ``v`` (broadcast), and the other reads ``G`` consecutive elements per lane, lanes ``G``
apart (a packed layout such as ``w[k // 4, j, k % 4]``). Each group of lanes then becomes one call:

- ``uint8 x int8 -> int32``: ``vpdpbusd`` when the target has ``avx512_vnni``;
- ``int8 x int8 -> int32``: the same instruction with the offset trick, ``x * w = (x + 128) * w - 128 * w``;
- ``bfloat16 x bfloat16 -> float32``: ``vdpbf16ps`` when the target has ``avx512_bf16`` (products are exact,
  the two additions per lane round to nearest even, subnormals flush to zero, as the instruction does).

A target without the feature gets the portable form of the same call (C loops over the lanes of GCC
vectors); the printed IR says which one (``vnni_dot4_...`` or ``dot4_...``). This module only recognizes
the pattern (the ``dot products`` pass, :func:`dot_products`, before ``explicit SIMD``); anything else is
left to :mod:`tesched.transform.vectorize`.
"""
from __future__ import annotations

from dataclasses import dataclass

from tesched.arith.linear import coefficient, constant_difference, simplify
from tesched.ir import nodes as ir
from tesched.ir.kinds import LoopKind
from tesched.ir.visitor import StmtMutator
from tesched.te.expr import BinOp, Binary, Call, Cast, Const, Expr
from tesched.te.visit import substitute

MIN_LANES = 4
"""Narrowest group of lanes a call handles; a shorter remainder keeps the scalar loop."""

MAX_INLINE_CHUNKS = 4
"""Up to this many full groups of lanes are written out one after the other, more run in a loop."""


@dataclass(frozen=True)
class DotKind:
    """One row of the table of dot products: operand and accumulator dtypes, steps per lane, and the
    target feature that provides the instruction."""

    operands: tuple[str, str]
    accumulator: str
    group: int
    feature: str
    name: str


DOT_KINDS = (
    DotKind(("uint8", "int8"), "int32", 4, "avx512_vnni", "dot4_u8s8"),
    DotKind(("int8", "int8"), "int32", 4, "avx512_vnni", "dot4_s8s8"),
    DotKind(("bfloat16", "bfloat16"), "float32", 2, "avx512_bf16", "dot2_bf16"),
)


def _narrow_load(e: Expr, accumulator: str) -> ir.Load | None:
    if isinstance(e, Cast) and e.dtype == accumulator and isinstance(e.value, ir.Load):
        return e.value
    return None


@dataclass
class _Match:
    kind: DotKind
    store: ir.Store
    first: ir.Load        # the operand of kind.operands[0]
    second: ir.Load
    first_broadcast: bool


def _match(loop: ir.For) -> _Match | None:
    inner = loop.body
    if not isinstance(inner, ir.For) or inner.step != 1 or not isinstance(inner.body, ir.Store):
        return None
    store = inner.body
    value = store.value
    if not isinstance(value, Binary) or value.op != BinOp.ADD or not isinstance(value.a, ir.Load) \
            or value.a.buffer is not store.buffer or not isinstance(value.b, Binary) or value.b.op != BinOp.MUL:
        return None
    flat = ir.flat_index(store.buffer, store.indices)
    if constant_difference(ir.flat_index(value.a.buffer, value.a.indices), flat) != 0 \
            or coefficient(flat, loop.var) != 1 or coefficient(flat, inner.var) != 0:
        return None
    left, right = _narrow_load(value.b.a, store.buffer.dtype), _narrow_load(value.b.b, store.buffer.dtype)
    if left is None or right is None:
        return None
    group = constant_difference(inner.end, inner.begin)
    for kind in DOT_KINDS:
        if kind.accumulator != store.buffer.dtype or kind.group != group:
            continue
        for first, second in ((left, right), (right, left)):
            if (first.dtype, second.dtype) != kind.operands:
                continue
            moves = [(coefficient(ir.flat_index(x.buffer, x.indices), loop.var),
                      coefficient(ir.flat_index(x.buffer, x.indices), inner.var)) for x in (first, second)]
            if moves == [(0, 1), (group, 1)]:
                return _Match(kind, store, first, second, True)
            if moves == [(group, 1), (0, 1)]:
                return _Match(kind, store, first, second, False)
    return None


def _call_name(m: _Match, features: frozenset[str]) -> str:
    prefix = "vnni_" if m.kind.feature == "avx512_vnni" else "bf16_"
    layout = "bv" if m.first_broadcast else "vb"
    return f"{prefix if m.kind.feature in features else ''}{m.kind.name}_{layout}"


def _chunk(m: _Match, loop: ir.For, base: Expr, lanes: int, name: str) -> ir.Stmt:
    inner = loop.body
    assert isinstance(inner, ir.For), "a matched pattern is two perfectly nested loops"
    at = {loop.var: base, inner.var: inner.begin}
    if lanes == 1:
        return substitute_loop(inner, loop.var, base)
    index = simplify(substitute(ir.flat_index(m.store.buffer, m.store.indices), at))
    dtype = ir.vector_dtype(m.kind.accumulator, lanes)
    addresses = [ir.Address(x.buffer, tuple(simplify(substitute(i, at)) for i in x.indices))
                 for x in (m.first, m.second)]
    call = Call(name, (ir.VLoad(m.store.buffer, index, lanes), *addresses), dtype)
    return ir.VStore(m.store.buffer, index, call)


def substitute_loop(inner: ir.For, var: ir.LoopVar, value: Expr) -> ir.Stmt:
    """``inner`` with ``var`` replaced by ``value`` (one lane of the pattern, computed as written)."""
    store = inner.body
    assert isinstance(store, ir.Store), "a matched pattern's body is one store"
    body = ir.Store(store.buffer, tuple(substitute(i, {var: value}) for i in store.indices),
                    substitute(store.value, {var: value}))
    return ir.For(inner.var, inner.begin, inner.end, LoopKind.SERIAL, body, reduction=True, stage=inner.stage)


def vectorize_dot_product(loop: ir.For, vector_bytes: int, features: frozenset[str]) -> ir.Stmt | None:
    """The vector form of ``loop`` if it is the dot-product pattern (see the module doc), else None."""
    trips = constant_difference(loop.end, loop.begin)
    if loop.step != 1 or trips is None or vector_bytes < 4 * MIN_LANES:
        return None
    m = _match(loop)
    if m is None:
        return None
    name = _call_name(m, features)
    width = vector_bytes // 4
    out: list[ir.Stmt] = []
    full = trips // width
    if full > MAX_INLINE_CHUNKS:
        chunk_var = ir.LoopVar(f"{loop.var.name}.v")
        base = simplify(Binary(BinOp.ADD, loop.begin, Binary(BinOp.MUL, chunk_var, Const(width, "int64"), "int64"), "int64"))
        out.append(ir.For(chunk_var, Const(0, "int64"), Const(full, "int64"), LoopKind.SERIAL,
                          _chunk(m, loop, base, width, name)))
    else:
        out += [_chunk(m, loop, simplify(Binary(BinOp.ADD, loop.begin, Const(k * width, "int64"), "int64")), width, name)
                for k in range(full)]
    offset, lanes = full * width, width // 2
    while offset < trips:
        while lanes >= MIN_LANES and trips - offset < lanes:
            lanes //= 2
        n = lanes if lanes >= MIN_LANES else 1
        out.append(_chunk(m, loop, simplify(Binary(BinOp.ADD, loop.begin, Const(offset, "int64"), "int64")), n, name))
        offset += n
    return ir.seq(out)


def dot_products(stmt: ir.Stmt, vector_bytes: int, features: frozenset[str]) -> ir.Stmt:
    """``stmt`` with every ``vectorized`` loop of the pattern in its vector form (a target without SIMD,
    ``vector_bytes`` 0, keeps them all)."""
    return _DotProducts(vector_bytes, features).visit(stmt) if vector_bytes > 0 else stmt


class _DotProducts(StmtMutator):
    def __init__(self, vector_bytes: int, features: frozenset[str]):
        self.vector_bytes, self.features = vector_bytes, features

    def visit_For(self, s: ir.For) -> ir.Stmt:
        done = vectorize_dot_product(s, self.vector_bytes, self.features) if s.kind is LoopKind.VECTORIZED else None
        return done if done is not None else self.visit_default(s)
