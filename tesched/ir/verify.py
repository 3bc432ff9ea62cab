"""Invariants of the loop IR, checked after each lowering pass in debug mode and in the test suite.

:func:`verify` walks a function body once and raises :class:`~tesched.errors.InternalError` (a compiler
bug, not a user error) naming the pass that broke one of these:

- every buffer read or written is an argument, an intermediate of the model, or allocated around the
  access;
- every variable is in scope: a loop's, a ``let``'s, a promoted register, a buffer origin declared by its
  allocation, or a symbolic size of the function;
- no tensor read (``TensorRead``) survives lowering;
- a load or store has one index per dimension of its buffer, or one element offset;
- a store writes its buffer's element type (a vector store, vectors of it; an integer buffer, any integer,
  as loop variables are int64);
- vector widths match: both operands of an arithmetic or comparison node have the same number of lanes,
  and vector operands the same element type; a select's branches have the same lanes and its condition
  one or theirs; a conversion keeps the lanes; a masked load's mask has its lanes; an assignment keeps
  the lanes of its variable;
- loop kinds are legal: a loop bound to a GPU index says which, and no other loop does; no parallel loop
  runs inside a vectorized one (once the pipeline's loop nesting check has told the user of such a
  schedule); a loop steps forward.

The walk keeps its own stack (a ``let`` chain may be thousands deep). It checks; it changes nothing.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from tesched.errors import InternalError
from tesched.ir import nodes as ir
from tesched.te import dtype as dt
from tesched.ir.visitor import child_fields
from tesched.ir.kinds import LoopKind
from tesched.te.expr import Binary, Expr, Select, Var
from tesched.te.tensor import TensorRead
from tesched.te.visit import walk

_SAME_TYPED = ("add", "sub", "mul", "div", "floordiv", "floormod", "min", "max", "lt", "le", "gt", "ge", "eq",
               "ne", "and", "or", "bitand", "bitor", "bitxor")


def verify(body: ir.Stmt, args: Sequence[ir.Buffer], params: Iterable[Var], intermediates: Iterable[ir.Buffer],
           after: str, nesting: bool = True) -> None:
    """Check the invariants of the module docstring on ``body``, a function of buffers ``args`` and sizes
    ``params`` whose root intermediates are ``intermediates``; ``after`` names the pass that produced it.
    ``nesting=False`` leaves out the nesting of parallel and vectorized loops (before the user's schedule
    is checked for it, it is the user's error)."""
    _Verifier(after, [*args, *intermediates], params, nesting).run(body)


class _Verifier:
    def __init__(self, after: str, buffers: Sequence[ir.Buffer], params: Iterable[Var], nesting: bool):
        self.after, self.nesting = after, nesting
        self.buffers: dict[int, int] = {}       # id -> how many scopes hold it (arguments: one, forever)
        self.vars: dict[int, int] = {}
        self.vectorized: list[ir.For] = []      # the vectorized loops around the statement walked
        for b in buffers:
            self._enter_buffer(b)
        for p in params:
            self.vars[id(p)] = 1

    def fail(self, what: str) -> None:
        raise InternalError(f"after the lowering pass {self.after!r}: {what}")

    # scopes -----------------------------------------------------------------------------------------
    def _enter_buffer(self, b: ir.Buffer) -> None:
        self.buffers[id(b)] = self.buffers.get(id(b), 0) + 1
        for off in b.offsets:
            if isinstance(off, ir.OriginVar):
                self.vars[id(off)] = self.vars.get(id(off), 0) + 1

    def _declared(self, s: ir.Stmt) -> tuple[list[Var], list[ir.Buffer]]:
        if isinstance(s, ir.For):
            return [s.var], []
        if isinstance(s, ir.LetStmt):
            return [s.var], []
        if isinstance(s, ir.Registers):
            return list(s.variables), []
        if isinstance(s, ir.Allocate):
            return [], [s.buffer]
        return [], []

    def _leave(self, variables: list[Var], buffers: list[ir.Buffer], vector: bool) -> None:
        if vector:
            self.vectorized.pop()
        for v in variables:
            self.vars[id(v)] -= 1
        for b in buffers:
            self.buffers[id(b)] -= 1
            for off in b.offsets:
                if isinstance(off, ir.OriginVar):
                    self.vars[id(off)] -= 1

    # the walk ---------------------------------------------------------------------------------------
    def run(self, body: ir.Stmt) -> None:
        stack: list[object] = [body]
        while stack:
            item = stack.pop()
            if isinstance(item, tuple):         # leaving a statement's scope
                self._leave(*item)
                continue
            assert isinstance(item, ir.Stmt)
            self.statement(item)
            variables, buffers = self._declared(item)
            if isinstance(item, ir.LetStmt):
                self.expression(item.value)     # a let's value is outside its own scope
            for v in variables:
                self.vars[id(v)] = self.vars.get(id(v), 0) + 1
            for b in buffers:
                self._enter_buffer(b)
            vector = isinstance(item, ir.For) and item.kind is LoopKind.VECTORIZED
            if isinstance(item, ir.For) and vector:
                self.vectorized.append(item)
            stack.append((variables, buffers, vector))
            kids = [value for _, field in child_fields(item)
                    for value in (field if isinstance(field, (list, tuple)) else (field,))]
            for kid in reversed(kids):
                if isinstance(kid, ir.Stmt):
                    stack.append(kid)
                elif isinstance(kid, Expr) and not (isinstance(item, ir.LetStmt) and kid is item.value):
                    self.expression(kid)

    def statement(self, s: ir.Stmt) -> None:
        if isinstance(s, ir.For):
            self.loop(s)
        if isinstance(s, (ir.Store, ir.VStore)):
            self.access(s.buffer, s.indices if isinstance(s, ir.Store) else (s.index,))
            base, _ = ir.split_dtype(s.value.dtype)
            if base != s.buffer.dtype and not (_integer(base) and _integer(s.buffer.dtype)):
                self.fail(f"a store of {s.value.dtype} into buffer {s.buffer.name} of {s.buffer.dtype}")
        if isinstance(s, ir.Assign) and not self.vars.get(id(s.var)):
            self.fail(f"an assignment to {s.var.name}, which no enclosing statement declares")
        if isinstance(s, ir.Assign) and _lanes(s.value) != _lanes(s.var):
            self.fail(f"an assignment of {s.value.dtype} to {s.var.name} of {s.var.dtype}")

    def loop(self, s: ir.For) -> None:
        if s.kind.bound != bool(s.thread):
            self.fail(f"loop {s.var.name} of kind {s.kind.value} has GPU index {s.thread or 'none'}")
        if s.kind is LoopKind.PARALLEL and self.vectorized and self.nesting:
            self.fail(f"parallel loop {s.var.name} runs inside the vectorized loop {self.vectorized[-1].var.name}")
        if s.step < 1:
            self.fail(f"loop {s.var.name} has step {s.step}")

    def access(self, buffer: ir.Buffer, indices: Sequence[Expr]) -> None:
        if not self.buffers.get(id(buffer)):
            self.fail(f"buffer {buffer.name} is accessed where it is neither an argument nor allocated")
        if len(indices) not in (1, len(buffer.shape)):
            self.fail(f"buffer {buffer.name} of {len(buffer.shape)} dimensions is accessed with "
                      f"{len(indices)} indices")

    def expression(self, e: Expr) -> None:
        for node in walk(e):
            if isinstance(node, TensorRead):
                self.fail(f"a read of tensor {node.tensor.name} survived lowering")
            elif isinstance(node, (ir.Load, ir.Address)):
                self.access(node.buffer, node.indices)
            elif isinstance(node, (ir.VLoad, ir.VLoadStrided, ir.VLoadMasked)):
                self.access(node.buffer, (node.index,))
            elif isinstance(node, Var) and not self.vars.get(id(node)):
                self.fail(f"variable {node.name} is used outside the statement that declares it")
            elif isinstance(node, Binary) and node.op in _SAME_TYPED and _vector_mismatch(node.a.dtype, node.b.dtype):
                self.fail(f"operands of {node.op} have types {node.a.dtype} and {node.b.dtype}")
            else:
                self.widths(node)

    def widths(self, node: Expr) -> None:
        if isinstance(node, Select) and (_lanes(node.true_value) != _lanes(node.false_value)
                                         or _lanes(node.cond) not in (1, _lanes(node.true_value))):
            self.fail(f"a select of {node.true_value.dtype} and {node.false_value.dtype} on {node.cond.dtype}")
        elif isinstance(node, ir.VCast) and _lanes(node) != _lanes(node.value):
            self.fail(f"a conversion of {node.value.dtype} to {node.dtype}")
        elif isinstance(node, ir.VLoadMasked) and _lanes(node.mask) != _lanes(node):
            self.fail(f"a masked load of {node.dtype} from {node.buffer.name} under a mask of {node.mask.dtype}")


def _integer(dtype: str) -> bool:
    """Integers (not bool): loops run over int64 variables, so a stage whose value is its own index stores
    an int64 expression into, say, an int32 buffer, converted as the stage's dtype says."""
    return dtype in dt.DTYPES and dt.is_int(dtype) and dtype != "bool"


def _lanes(e: Expr) -> int:
    return ir.split_dtype(e.dtype)[1]


def _vector_mismatch(a: str, b: str) -> bool:
    """Whether two operand types differ in lanes, or are vectors of different elements (scalar integers
    of different widths meet in index arithmetic, as C's promotions allow)."""
    (base_a, lanes_a), (base_b, lanes_b) = ir.split_dtype(a), ir.split_dtype(b)
    return lanes_a != lanes_b or (lanes_a > 1 and base_a != base_b)
