"""The statements of the loop IR (see :mod:`.nodes` for the list): each a dataclass whose fields that
hold expressions, statements or sequences of them are its children, except the variables it declares
(``binds``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, ClassVar, Sequence

from tesched.ir.exprs import Address, Buffer, LoopVar, RegisterVar
from tesched.ir.kinds import LoopKind
from tesched.te.expr import Expr, Var
from tesched.te.intrinsic import TensorIntrin


_format: Callable[["Stmt"], str] | None = None


def set_formatter(format_stmt: Callable[["Stmt"], str]) -> None:
    """Install the text ``str()`` gives a statement (:mod:`.printer` does, when imported)."""
    global _format
    _format = format_stmt


@dataclass(eq=False)
class Stmt:
    """Base class of statements (each a dataclass whose fields are its children and attributes)."""

    binds: ClassVar[tuple[str, ...]] = ()   # fields naming variables the statement declares (not children)

    def __str__(self) -> str:
        return _format(self) if _format is not None else type(self).__name__


@dataclass(eq=False)
class For(Stmt):
    """``for var in [begin, end) step step: body``."""

    binds: ClassVar[tuple[str, ...]] = ("var",)
    var: LoopVar
    begin: Expr
    end: Expr                  # exclusive upper bound
    kind: LoopKind
    body: Stmt
    step: int = 1
    extent_hint: int | None = None   # the loop's largest trip count when known (unroll factor)
    reduction: bool = False          # iterations accumulate into the same elements (a reduce loop)
    stage: str = ""                  # the stage whose loop this is
    origin: str = ""                 # the schedule primitive that made its variable (``split(i, factor=32)``)
    pragmas: tuple[tuple[str, bool | int], ...] = ()   # C loop hints (``Stage.pragma``): name, value
    thread: str = ""                 # the GPU index of a bound loop (``Stage.bind``): "blockIdx.x", ...


@dataclass(eq=False)
class IfThenElse(Stmt):
    """``if cond: then_case else: else_case``."""

    cond: Expr
    then_case: Stmt
    else_case: Stmt | None = None


@dataclass(eq=False)
class Block(Stmt):
    """Statements in order."""

    stmts: list[Stmt] = field(default_factory=list)


@dataclass(eq=False)
class Store(Stmt):
    """``buffer[indices] = value`` (tensor coordinates, or one element offset: see ``Load``). ``atomic``:
    ``value`` is ``buffer[indices] + x``, done as one atomic addition (a scatter whose updates run on
    several threads)."""

    buffer: Buffer
    indices: tuple
    value: Expr
    atomic: bool = False


@dataclass(eq=False)
class VStore(Stmt):
    """Store a vector at flat element offset ``index`` of ``buffer``."""

    buffer: Buffer
    index: Expr
    value: Expr


@dataclass(eq=False)
class Prefetch(Stmt):
    """A hint to bring the cache line holding ``address`` in for reading (``__builtin_prefetch``)."""

    address: Address


@dataclass(eq=False)
class IntrinsicCall(Stmt):
    """A call of a tensor intrinsic's C function (``intrin`` carries its source)."""

    function: str
    args: list[Expr]
    intrin: TensorIntrin


@dataclass(eq=False)
class Registers(Stmt):
    """Scalar or vector variables (promoted from a small local buffer) declared for ``body``."""

    binds: ClassVar[tuple[str, ...]] = ("variables",)
    variables: list["RegisterVar"]
    body: Stmt


@dataclass(eq=False)
class Allocate(Stmt):
    """``buffer`` exists inside ``body``."""

    buffer: Buffer
    body: Stmt


@dataclass(eq=False)
class Assign(Stmt):
    """``var = value`` for a variable declared by an enclosing statement."""

    binds: ClassVar[tuple[str, ...]] = ("var",)
    var: Var
    value: Expr


@dataclass(eq=False)
class LetStmt(Stmt):
    """``var`` bound to ``value`` (computed once) inside ``body``."""

    binds: ClassVar[tuple[str, ...]] = ("var",)
    var: Var
    value: Expr
    body: Stmt


@dataclass(eq=False)
class Timer(Stmt):
    """Time ``body`` into profile counter ``slot`` (``build(..., profile=True)``). ``label`` names what is
    timed; ``parallel`` tells that it runs inside a parallel loop, so its time is summed over threads."""

    slot: int
    label: str
    body: Stmt
    parallel: bool = False


@dataclass(eq=False)
class Produce(Stmt):
    """The computation of stage ``stage`` (a marker for readers of the IR)."""

    stage: str
    body: Stmt


def seq(stmts: Sequence[Stmt]) -> Stmt:
    flat: list[Stmt] = []
    for s in stmts:
        flat.extend(s.stmts if isinstance(s, Block) else [s])
    return flat[0] if len(flat) == 1 else Block(flat)
