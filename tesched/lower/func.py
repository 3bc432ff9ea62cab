""":class:`LoweredFunc`: what ``lower()`` returns and ``build()`` compiles.

A function over buffers (the arguments, in call order) and size parameters, whose body is loop IR.
``print()`` shows it as pseudo-code, headed by the redundancy of every stage computed inside another
(how many points it computes relative to its size: a recomputed halo shows as more than 1.00x) and by
what register promotion does with its local buffers of constant size on the current target (promoted, or
kept in memory for their size; see :mod:`tesched.transform.registers`): the pipeline that made the function
gives it, as ``finisher``, its own build phase to ask.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

from tesched.ir import nodes as ir
from tesched.ir.printer import IRPrinter
from tesched.ir.visitor import walk_stmts
from tesched.lower.hooks import write_page
from tesched.poly.buffers import redundancy
from tesched.poly.model import PolyModel
from tesched.poly.traffic import Traffic, global_traffic
from tesched.poly.tree import build_tree
from tesched.target import Target, current_target
from tesched.te.expr import Param, Var
from tesched.arith.simplify import simplify
from tesched.te.expr import Cast, Expr
from tesched.te.realize import Region, inferred_region, region_text
from tesched.te.tensor import ComputeOp, Tensor
from tesched.transform.registers import Promotion


@dataclass(frozen=True, eq=False)
class LoweredFunc:
    """A lowered function.

    Attributes
    ----------
    name : str
        The function's name.
    args : tuple of Buffer
        Its buffer arguments, in call order.
    arg_tensors : tuple of Tensor
        The tensors those buffers hold.
    params : tuple of Var
        Symbolic sizes, passed after the buffers.
    body : Stmt
        The loop IR.
    model : PolyModel
        The polyhedral model it was lowered from (domains, footprints, buffers).
    scalars : tuple of Var
        Runtime parameters (``ts.param``), passed after the sizes, each as a value of its dtype.
    promotions : tuple of tesched.transform.registers.Promotion or None
        Once finished for a target (as ``build`` does), what register promotion did with its local buffers
        of constant size; None for what ``lower()`` returns (see :meth:`register_promotions`).
    finisher : Callable or None
        ``finisher(func, target)``: the build phase of the pipeline that lowered it (unroll, explicit SIMD,
        registers), which :meth:`register_promotions` asks.
    """

    name: str
    args: tuple[ir.Buffer, ...]
    arg_tensors: tuple[Tensor, ...]
    params: tuple[Var, ...]
    body: ir.Stmt
    model: PolyModel
    scalars: tuple[Param, ...] = ()
    promotions: tuple[Promotion, ...] | None = None
    finisher: Callable[["LoweredFunc", Target], "LoweredFunc"] | None = field(default=None, repr=False)

    @cached_property
    def redundancy(self) -> dict[str, float]:
        """For each stage computed inside another, the points computed divided by its size (1.0 means no recompute)."""
        return redundancy(self.model)

    @cached_property
    def global_traffic(self) -> Traffic:
        """The elements of global memory (arguments, intermediates computed at the root) each GPU block
        reads and writes, per tensor, summed over the blocks, from the exact footprints (see
        ``tesched.poly.traffic``): what fusing stages into one kernel saves. Sizes must be constant."""
        return global_traffic(self.model, build_tree(self.model))

    def register_promotions(self, target: Target | None = None) -> tuple[Promotion, ...]:
        """What register promotion does with the local buffers of constant size: this function's own once
        finished for a target, else those a build for ``target`` (the current one by default) makes."""
        if self.promotions is not None:
            return self.promotions
        if not any(isinstance(s, ir.Allocate) and s.buffer.scope is ir.BufferScope.LOCAL
                   and s.buffer.constant_shape() is not None for s in walk_stmts(self.body)):
            return ()
        if self.finisher is None:
            raise RuntimeError(f"{self.name}: register_promotions needs the pipeline that lowered it (finisher)")
        return self.finisher(self, target or current_target()).promotions or ()

    def __str__(self) -> str:
        printer = IRPrinter()
        sig = ", ".join(f"{printer.buffer(b)}: {b.dtype}[{', '.join(printer.dim(d) for d in b.shape)}]"
                        for b in self.args)
        if self.params:
            sig += ", " + ", ".join(f"{p.name}: int64" for p in self.params)
        if self.scalars:
            sig += ", " + ", ".join(f"{p.name}: {p.dtype}" for p in self.scalars)
        notes = "".join(f"# {st.name}: region inferred from its readers: {_region_text(st.op, region)}\n"
                        for st in self.model.schedule.stages
                        if isinstance(st.op, ComputeOp) and (region := inferred_region(st.op)) is not None)
        notes += "".join(f"# {stage}: computes {factor:.2f}x its points (recomputed halo or re-executed "
                        f"per outer iteration)\n" for stage, factor in self.redundancy.items())
        notes += "".join(f"# {promotion}\n" for promotion in self.register_promotions())
        return notes + f"def {self.name}({sig}):\n" + printer.stmt(self.body, 1)

    def __repr__(self) -> str:
        return str(self)

    def to_html(self, path: str | Path, **options: Any) -> Path:
        """Write a self-contained HTML page of this function (loop IR, tiles and halos; see
        :func:`tesched.viz.write_kernel_page`) and return its path."""
        return write_page("kernel", self, path, **options)


def _region_text(op: ComputeOp, region: Region) -> str:
    """``y in [-1, H + 1), x in [0, W)``: an inferred region along each axis."""
    def bound(e: int | Expr) -> str:
        if isinstance(e, int):
            return str(e)
        e = simplify(e)
        return region_text(e.value if isinstance(e, Cast) else e)

    return ", ".join(f"{a.name} in [{bound(lo)}, {bound(ext + lo if isinstance(ext, Expr) else lo + ext)})"
                     for a, (lo, ext) in zip(op.axis, region))
