"""Pseudo-code for the loop IR: what ``print(ts.lower(...))`` shows.

One ``produce <stage>`` block per stage where it is computed, every loop with its name, bounds and kind,
allocations with their extents and (for ``compute_at`` regions) their origin. Loops that share a user's
axis name get a ``#2`` suffix, and so do buffers. An access with one index into a buffer of several
dimensions is its element offset (see :mod:`tesched.transform.flatten_indices`). Importing this module installs the text that ``str()``
gives a statement. It knows nothing of isl or C.
"""
from __future__ import annotations

from tesched.ir import node_types as ir
from tesched.ir.kinds import LoopKind
from tesched.ir.visitor import let_chain
from tesched.te.expr import Binary, Expr, Var
from tesched.te.expr import set_formatter as set_expr_formatter
from tesched.te.printer import ExprPrinter
from tesched.te.visit import NodeFunctor


class _Names:
    """Readable, distinct names for loop variables and buffers."""

    def __init__(self) -> None:
        self.vars: dict[int, str] = {}
        self.used: set[str] = set()
        self.buffers: dict[int, str] = {}
        self.buffer_names: set[str] = set()

    def var(self, v: Var) -> str:
        if id(v) not in self.vars:
            name, k = v.name, 1
            if isinstance(v, ir.LoopVar):
                while name in self.used:
                    k += 1
                    name = f"{v.name}#{k}"
                self.used.add(name)
            self.vars[id(v)] = name
        return self.vars[id(v)]

    def buffer(self, b: object) -> str:
        if id(b) not in self.buffers:
            base = getattr(b, "name")
            name, k = base, 1
            while name in self.buffer_names:
                k += 1
                name = f"{base}#{k}"
            self.buffer_names.add(name)
            self.buffers[id(b)] = name
        return self.buffers[id(b)]


class IRExprPrinter(ExprPrinter):
    """Expressions of the loop IR (loads, vector nodes, addresses) on top of :class:`ExprPrinter`."""

    def __init__(self, names: _Names | None = None):
        self.names = names or _Names()

    def name_of(self, v: Var) -> str:
        return self.names.var(v)

    def buffer_name(self, buffer: object) -> str:
        return self.names.buffer(buffer)

    def visit_Load(self, x: ir.Load) -> tuple[str, int]:
        return f"{self.buffer_name(x.buffer)}[{', '.join(self.text(i) for i in x.indices)}]", 7

    def visit_CheckedIndex(self, x: ir.CheckedIndex) -> tuple[str, int]:
        extent = x.extent if isinstance(x.extent, int) else self.text(x.extent)
        return f"checked({self.text(x.value)}, {extent})", 7

    def visit_VLoad(self, x: ir.VLoad) -> tuple[str, int]:
        return f"{self.buffer_name(x.buffer)}[ramp({self.text(x.index)}, {x.lanes})]", 7

    def visit_VLoadStrided(self, x: ir.VLoadStrided) -> tuple[str, int]:
        return f"{self.buffer_name(x.buffer)}[ramp({self.text(x.index)}, {x.lanes}, stride={self.text(x.stride)})]", 7

    def visit_VLoadMasked(self, x: ir.VLoadMasked) -> tuple[str, int]:
        return f"{self.buffer_name(x.buffer)}[ramp({self.text(x.index)}, {x.lanes}), where {self.text(x.mask)}]", 7

    def visit_VGather(self, x: ir.VGather) -> tuple[str, int]:
        return f"{self.buffer_name(x.buffer)}[gather({self.text(x.index)})]", 7

    def visit_Ramp(self, x: ir.Ramp) -> tuple[str, int]:
        return f"ramp({self.text(x.base)}, {x.lanes})", 7

    def visit_Broadcast(self, x: ir.Broadcast) -> tuple[str, int]:
        return f"x{x.lanes}({self.text(x.value)})", 7

    def visit_HReduce(self, x: ir.HReduce) -> tuple[str, int]:
        return f"reduce_{x.op}({self.text(x.value)})", 7

    def visit_Lane(self, x: ir.Lane) -> tuple[str, int]:
        return f"{self.text(x.value)}.lane[{x.index}]", 7

    def visit_VCast(self, x: ir.VCast) -> tuple[str, int]:
        return f"{x.dtype}({self.text(x.value)})", 7

    def visit_Address(self, x: ir.Address) -> tuple[str, int]:
        return f"&{self.buffer_name(x.buffer)}[{', '.join(self.text(i) for i in x.indices)}]", 7


class IRPrinter(NodeFunctor):
    """Statements as indented pseudo-code; ``stmt(s, indent)`` returns the text."""

    def __init__(self) -> None:
        self.names = _Names()
        self.exprs = IRExprPrinter(self.names)
        self.indent = 0
        self.bound: list[LoopKind] = []     # kinds of the enclosing loops bound to GPU indices

    def expr(self, e: Expr) -> str:
        return self.exprs.text(e)

    def buffer(self, b: object) -> str:
        return self.names.buffer(b)

    def name_of(self, v: Var) -> str:
        return self.names.var(v)

    def dim(self, d: int | Expr) -> str:
        return str(d) if isinstance(d, int) else self.expr(d)

    def stmt(self, s: ir.Stmt, indent: int = 0) -> str:
        saved, self.indent = self.indent, indent
        try:
            return self.visit(s)
        finally:
            self.indent = saved

    def _pad(self) -> str:
        return "  " * self.indent

    def _nested(self, s: ir.Stmt, extra: int = 1) -> str:
        return self.stmt(s, self.indent + extra)

    def visit_Block(self, s: ir.Block) -> str:
        return "".join(self.visit(c) for c in s.stmts)

    def visit_For(self, s: ir.For) -> str:
        kind = "" if s.kind is LoopKind.SERIAL else f"bind({s.thread}) " if s.thread else f"{s.kind} "
        step = "" if s.step == 1 else f" step {s.step}"
        hints = "".join(f" pragma({k}={v})" for k, v in s.pragmas)
        head = (f"{self._pad()}{kind}for {self.name_of(s.var)} in [{self.expr(s.begin)}, {self.expr(s.end)})"
                f"{step}{hints} {{\n")
        self.bound += [s.kind] if s.kind.bound else []
        body = self._nested(s.body)
        self.bound = self.bound[:-1] if s.kind.bound else self.bound
        return head + body + f"{self._pad()}}}\n"

    def visit_IfThenElse(self, s: ir.IfThenElse) -> str:
        out = f"{self._pad()}if ({self.expr(s.cond)}) {{\n" + self._nested(s.then_case)
        if s.else_case is not None:
            out += f"{self._pad()}}} else {{\n" + self._nested(s.else_case)
        return out + f"{self._pad()}}}\n"

    def visit_Store(self, s: ir.Store) -> str:
        idx = ", ".join(self.expr(i) for i in s.indices)
        if s.atomic and isinstance(s.value, Binary):
            return f"{self._pad()}atomic {self.buffer(s.buffer)}[{idx}] += {self.expr(s.value.b)}\n"
        return f"{self._pad()}{self.buffer(s.buffer)}[{idx}] = {self.expr(s.value)}\n"

    def visit_VStore(self, s: ir.VStore) -> str:
        lanes = ir.split_dtype(s.value.dtype)[1]
        return f"{self._pad()}{self.buffer(s.buffer)}[ramp({self.expr(s.index)}, {lanes})] = {self.expr(s.value)}\n"

    def visit_Allocate(self, s: ir.Allocate) -> str:
        b = s.buffer
        dims = " * ".join(self.dim(d) for d in b.shape)
        head = f"{self._pad()}allocate {self.buffer(b)}[{b.dtype} * {dims}]"
        if b.scope is ir.BufferScope.LOCAL:
            head += f"  // region of {self.buffer(b)} starting at [{', '.join(self.expr(o) for o in b.offsets)}]"
            head += "".join(f", dimension {d} folded modulo {f}" for d, f in sorted(b.folds.items()))
        if b.aligns:
            head += f"  // strides {b.strides()} (storage_align)"
        if b.order is not None:
            head += f"  // stored in dimension order {list(b.order)} (reorder_storage)"
        if b.scope is ir.BufferScope.LOCAL and self.bound:   # on a GPU target
            head += ("  // per thread, in registers" if LoopKind.GPU_THREAD in self.bound
                     else "  // per block, in shared memory")
        return head + "\n" + self.visit(s.body)

    def visit_Assign(self, s: ir.Assign) -> str:
        return f"{self._pad()}{self.name_of(s.var)} = {self.expr(s.value)}\n"

    def visit_Prefetch(self, s: ir.Prefetch) -> str:
        return f"{self._pad()}prefetch {self.expr(s.address)[1:]}\n"

    def visit_IntrinsicCall(self, s: ir.IntrinsicCall) -> str:
        return f"{self._pad()}call {s.function}({', '.join(self.expr(a) for a in s.args)})\n"

    def visit_Registers(self, s: ir.Registers) -> str:
        names = ", ".join(f"{self.name_of(v)}: {v.dtype}" for v in s.variables)
        return f"{self._pad()}registers {names}\n" + self.visit(s.body)

    def visit_LetStmt(self, s: ir.LetStmt) -> str:
        chain, inner = let_chain(s)
        lets = [f"{self._pad()}let {self.name_of(let.var)} = {self.expr(let.value)}\n" for let in chain]
        return "".join(lets) + self.visit(inner)

    def visit_Timer(self, s: ir.Timer) -> str:
        where = ", summed over threads" if s.parallel else ""
        return f"{self._pad()}timed {s.label} (counter {s.slot}{where}) {{\n" + self._nested(s.body) + f"{self._pad()}}}\n"

    def visit_Produce(self, s: ir.Produce) -> str:
        return f"{self._pad()}produce {s.stage} {{\n" + self._nested(s.body) + f"{self._pad()}}}\n"


def stmt_str(s: ir.Stmt) -> str:
    """The pseudo-code of a statement."""
    return IRPrinter().stmt(s)


ir.set_formatter(stmt_str)
set_expr_formatter(lambda e: IRExprPrinter().text(e))   # repr() of expressions knows the IR's nodes too
