"""The index maps of a tensorize match: which tensor dimension each intrinsic dimension follows.

An intrinsic reads (or writes) its tensor ``x`` at indices ``I_e(r)`` of its axes ``r``; the tensorized
stage reads the matching tensor ``T`` at ``T_d(o, r)``, where ``o`` are the loops, sizes and values
outside the region. The call passes a pointer to ``T`` at an origin and one stride per dimension of
``x``, so the match is right exactly when each intrinsic dimension ``e`` follows one tensor dimension
``d`` with ``T_d(o, r) - I_e(r)`` the same for every ``r`` in the intrinsic's box (the origin is that
difference), in order, and every other tensor dimension does not move with ``r`` at all.

Indices may be quasi-affine in the region's loops: sums, products by constants, floor division and
modulo by positive constants (``x[j // 3 + i % 3]``). A linear form decides the affine case; otherwise
isl decides it over the box, with every subexpression that does not involve the region (outer loops,
sizes, data-dependent reads) taken as a free parameter, so a match holds for all of their values.
A region index that is not quasi-affine (a division by a loop, a data-dependent read at a region loop)
is refused. This module does not find the loops or compare expressions: see :mod:`.tensorize`.
"""
from __future__ import annotations

from typing import Callable, Sequence

import islpy as isl

from tesched.arith.linear import linear, simplify
from tesched.arith.simplify import simplify as fold
from tesched.errors import TensorizeError
from tesched.poly.affine import NotAffine, const_int, to_isl
from tesched.te import dtype as dt
from tesched.poly.model import Region
from tesched.te.expr import BinOp, Binary, Cast, Const, Expr, Unary, Var
from tesched.te.tensor import IterVar, Tensor
from tesched.te.visit import rewrite, structural_key, substitute, walk

Fail = Callable[[str, str], TensorizeError]


class _Box:
    """The intrinsic's axes as isl variables over their box, and the parameters standing for the rest."""

    def __init__(self, axes: Sequence[Var]):
        self.axes = list(axes)
        self.ids = {id(a) for a in axes}
        self.names = {id(a): f"r{k}" for k, a in enumerate(axes)}
        self.zero = {id(a): "0" for a in axes}
        self.params: dict[tuple, Var] = {}
        conds = []
        for k, a in enumerate(axes):
            extent = a.dom.extent if isinstance(a, IterVar) and a.dom is not None else None
            conds.append(f"0 <= r{k} < {extent}" if isinstance(extent, int) else f"0 <= r{k}")
        self.conds = " and ".join(conds) or "true"

    def involves(self, e: Expr) -> bool:
        return any(id(n) in self.ids for n in walk(e))

    def abstract(self, e: Expr) -> Expr:
        """``e`` with each variable outside the region, and each largest subexpression free of the region
        that isl cannot read (a data-dependent read, a product of sizes), replaced by a parameter; equal
        subexpressions share one. Arithmetic isl reads is kept: ``(16*o + r) // 4`` stays periodic in r."""
        def outside(x: Expr) -> Expr | None:
            if isinstance(x, Const) or self.involves(x) or _quasi_affine_node(x):
                return None
            key = structural_key(x)
            if key not in self.params:
                self.params[key] = Var(f"p{len(self.params)}", "int64")
            return self.params[key]
        return rewrite(e, outside)

    def is_constant(self, e: Expr) -> bool:
        """Whether ``e`` takes one value over the whole box, for every value of the rest (raises
        NotAffine when ``e`` is not quasi-affine in the axes)."""
        atoms: dict = {}
        terms, _ = linear(e, atoms)
        if not any(k[0] == "atom" and self.involves(atoms[k]) for k in terms):   # affine: the form decides
            return not any(k[0] == "var" and k[1] in self.ids for k in terms)
        e = self.abstract(e)
        names = {id(p): p.name for p in self.params.values()}
        at_r, at_0 = to_isl(e, {**names, **self.names}), to_isl(e, {**names, **self.zero})
        space = f"[{', '.join(p.name for p in self.params.values())}] -> " if self.params else ""
        coords = ", ".join(self.names.values())
        return isl.Set(f"{space}{{ [{coords}] : {self.conds} and ({at_r}) != ({at_0}) }}").is_empty()


def _quasi_affine_node(x: Expr) -> bool:
    """Whether isl reads the node ``x`` itself as quasi-affine arithmetic of its children."""
    if isinstance(x, Binary) and x.op in (BinOp.ADD, BinOp.SUB):
        return True
    if isinstance(x, Binary) and x.op == BinOp.MUL:
        return const_int(x.a) is not None or const_int(x.b) is not None
    if isinstance(x, Binary) and x.op in (BinOp.FLOORDIV, BinOp.FLOORMOD):
        divisor = const_int(x.b)
        return divisor is not None and divisor > 0
    return isinstance(x, Unary) and x.op == "neg" or isinstance(x, Cast) and dt.is_int(x.dtype) and dt.is_int(x.value.dtype)


def match_region(tensor: Tensor, t_idx: Sequence[Expr], i_idx: Sequence[Expr], pairs: Sequence[tuple[Var, Var]],
                 label: str, fail: Fail) -> Region:
    """The region of ``tensor`` (read at ``t_idx``, functions of tesched's loops) that the intrinsic's
    tensor ``label`` (read at ``i_idx``, functions of its axes) stands for; ``pairs`` maps each region
    loop to its intrinsic axis. Raises ``fail("index map", reason)`` when there is none."""
    box = _Box([iv for _, iv in pairs])
    shown = list(t_idx)             # in tesched's loops, for messages
    t_idx = [substitute(e, {tv: iv for tv, iv in pairs}) for e in t_idx]

    def check(e: Expr, what: str) -> bool:
        try:
            return box.is_constant(e)
        except NotAffine as err:
            raise fail("index map", f"{what} is not quasi-affine in the intrinsic's axes ({err}; floor "
                       "division and modulo must be by a positive constant)") from None

    moves = [not check(e, f"{tensor.name} index {d} ({shown[d]!r})") for d, e in enumerate(t_idx)]
    for e, ie in enumerate(i_idx):
        check(ie, f"index {e} of {label} ({ie!r})")
    dims: list[int] = []
    d = 0
    for e, ie in enumerate(i_idx):
        while d < len(t_idx) and not check(Binary(BinOp.SUB, t_idx[d], ie, "int64"), f"{tensor.name} index {d}"):
            if moves[d]:
                raise fail("index map", f"{tensor.name} index {d} ({shown[d]!r}) does not follow {label} "
                           f"index {e} ({ie!r})")
            d += 1
        if d == len(t_idx):
            raise fail("index map", f"no index of {tensor.name} follows {label} index {e} ({ie!r})")
        dims.append(d)
        d += 1
    for k in range(d, len(t_idx)):
        if moves[k]:
            raise fail("index map", f"{tensor.name} index {k} ({shown[k]!r}) varies inside the region but no "
                       f"index of {label} follows it")
    zero = {iv: Const(0, "int64") for _, iv in pairs}
    origin = []
    for k, index in enumerate(t_idx):
        base = substitute(index, zero)
        if k in dims:
            base = Binary(BinOp.SUB, base, substitute(i_idx[dims.index(k)], zero), "int64")
        origin.append(simplify(fold(base)))
    return Region(tensor, origin, dims)
