"""Loop IR -> C99 source.

One function per lowered program: ``int name(T* restrict arg, ..., int64_t size...)``, returning 0, or
``k`` when the ``k``-th heap allocation (``CSource.allocations[k - 1]``) failed: the caller raises
``MemoryError`` naming the buffer, never a crash; or ``-k`` when the ``k``-th checked index
(``CSource.checks[k - 1]``, a data-dependent index outside its tensor) was out of range: the caller raises
``BoundsError`` with its message. Sizes are multiplied with overflow checks. Loops carry their
kind as pragmas: ``parallel`` -> ``#pragma omp parallel for``, ``vectorized`` -> ``#pragma omp simd``,
``unrolled`` -> ``#pragma GCC unroll``; loop hints (``Stage.pragma``) -> ``#pragma GCC ivdep`` /
``#pragma GCC unroll N``. Index arithmetic is ``int64_t``; tensor coordinates are flattened
row-major, minus a local buffer's origin. Local buffers of constant size up to :data:`STACK_LIMIT` bytes
live on the stack (aligned), larger ones on the heap. Profiling timers (``build(..., profile=True)``)
become clock reads around their block, static counters and a function that reads them
(``CSource.profile``). Every identifier comes from :class:`~tesched.names.NameTable`. This module knows
nothing of isl or cffi.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


from tesched.arith.interval import INDEX_TYPES, VarRanges, bound
from tesched.codegen.argv import ARGV_SUFFIX, argv_function, argv_prototype
from tesched.codegen.data_conditions import branches_on_data
from tesched.codegen.c_expr import CExpr, c_type, memory_vector_type
from tesched.codegen.extern import extern_calls, extern_text
from tesched.codegen.hoist import loop_bases
from tesched.codegen.names import NameTable, sanitize
from tesched.ir import nodes as ir
from tesched.ir.visitor import StmtVisitor, let_chain, walk_stmts
from tesched.lower.func import LoweredFunc
from tesched.ir.kinds import LoopKind
from tesched.target import Target, current_target
from tesched.te import dtype as dt
from tesched.te.expr import BinOp, Binary, Expr, Select, Var
from tesched.te.intrinsic import TensorIntrin
from tesched.te.visit import NodeFunctor, structural_key, walk
from tesched.arith.interval import refine
from tesched.transform.simplify_indices import loop_range

STACK_LIMIT = 128 * 1024


class _SelectReads(StmtVisitor):
    """Finds a read of ``buffer`` in a branch of a select (a read that only runs when chosen)."""

    def __init__(self, buffer: ir.Buffer):
        self.buffer, self.found = buffer, False

    def visit_expr(self, e: Expr) -> None:
        self.found = self.found or any(
            isinstance(select, Select) and any(isinstance(r, ir.Load) and r.buffer is self.buffer
                                               for branch in (select.true_value, select.false_value)
                                               for r in walk(branch))
            for select in walk(e))


def _read_under_select(buffer: ir.Buffer, body: ir.Stmt) -> bool:
    """Whether ``body`` reads ``buffer`` in a branch of a select."""
    finder = _SelectReads(buffer)
    finder.visit(body)
    return finder.found


@dataclass
class CSource:
    """Generated C: the full ``source``, the ``declaration`` for cffi, the function's C name, and the
    buffers allocated on the heap (the function returns ``k`` when the ``k``-th of them failed)."""

    name: str
    source: str
    declaration: str
    profile: str = ""       # the C function reading the profile counters (``build(..., profile=True)``)
    allocations: tuple[ir.Buffer, ...] = ()
    checks: tuple[str, ...] = ()    # the message of each checked index (the function returns -k for the k-th)
    argv: str = ""          # the ``int argv(void *const *args)`` companion (:mod:`.argv`), when there is one


class CodeGen(NodeFunctor):
    """C statements of a lowered function: ``function()`` returns its :class:`CSource`."""

    def __init__(self, func: LoweredFunc, reserved: frozenset[str], target: Target):
        self.func, self.target = func, target
        self.names = NameTable(tuple(reserved))
        self.lines: list[str] = []
        self.indent = 1
        self.intrinsics: list[TensorIntrin] = []
        self.allocations: list[ir.Buffer] = []
        self.status = self.names.fresh("status")
        self.exprs = CExpr(self.names, self.status)
        self.declared: list[Var] = []

    def name(self, obj: object, hint: str) -> str:
        return self.names.get(obj, hint)

    def expr(self, e: Expr) -> str:
        return self.exprs.text(e)

    def dim(self, d: int | Expr) -> str:
        return str(d) if isinstance(d, int) else self.expr(d)

    def emit(self, line: str, extra: int = 0) -> None:
        self.lines.append("  " * (self.indent + extra) + line)

    def nested(self, s: ir.Stmt, ranges: VarRanges | None = None) -> None:
        """Write ``s`` one level deeper, under ``ranges`` (the enclosing loops') if given."""
        saved = self.exprs.ranges
        self.exprs.ranges = ranges or saved
        self.indent += 1
        self.visit(s)
        self.indent -= 1
        self.exprs.ranges = saved

    # statements -----------------------------------------------------------------------------------
    def visit_Block(self, s: ir.Block) -> None:
        for c in s.stmts:
            self.visit(c)

    def visit_IfThenElse(self, s: ir.IfThenElse) -> None:
        self.emit(f"if ({self.expr(s.cond)}) {{")
        self.nested(s.then_case, refine(s.cond, self.exprs.ranges))
        if s.else_case is not None:
            self.emit("} else {")
            self.nested(s.else_case)
        self.emit("}")

    def visit_Store(self, s: ir.Store) -> None:
        if s.atomic:
            assert isinstance(s.value, Binary) and s.value.op == BinOp.ADD, "an atomic store is an addition"
            self.emit("#pragma omp atomic")
            self.emit(f"{self.exprs.element(s.buffer, s.indices)} += {self.expr(s.value.b)};")
            return
        value = self.expr(s.value)
        if isinstance(s.value, ir.Load) and s.value.buffer.dtype == s.buffer.dtype:   # a copy keeps the bits
            value = self.exprs.element(s.value.buffer, s.value.indices)
        elif dt.computed_in_float32(s.buffer.dtype):
            value = f"ts_store_{dt.info(s.buffer.dtype).suffix}({value})"
        self.emit(f"{self.exprs.element(s.buffer, s.indices)} = {value};")

    def visit_VStore(self, s: ir.VStore) -> None:
        target = f"&{self.name(s.buffer, s.buffer.name)}[{self.exprs.index(s.index)}]"
        base, lanes = ir.split_dtype(s.value.dtype)
        if isinstance(s.value, ir.VLoad) and dt.computed_in_float32(base):   # a copy keeps the bits
            source = f"&{self.name(s.value.buffer, s.value.buffer.name)}[{self.exprs.index(s.value.index)}]"
            self.emit(f"ts_vstore_u16x{lanes}({target}, ts_vload_u16x{lanes}({source}));")
            return
        value = self.expr(s.value)
        if base == "bool":
            value = f"(-{value})"                               # masks of all ones are stored as 1
        self.emit(f"ts_vstore_{memory_vector_type(s.value.dtype)}({target}, {value});")

    def visit_Prefetch(self, s: ir.Prefetch) -> None:
        self.emit(f"__builtin_prefetch({self.expr(s.address)}, 0, 3);")

    def visit_IntrinsicCall(self, s: ir.IntrinsicCall) -> None:
        if all(i is not s.intrin for i in self.intrinsics):
            self.intrinsics.append(s.intrin)
        self.emit(f"{s.function}({', '.join(self.expr(a) for a in s.args)});")

    def visit_Registers(self, s: ir.Registers) -> None:
        self.emit("{")
        for v in s.variables:
            self.emit(f"{c_type(v.dtype)} {self.name(v, v.name)};", 1)
        self.nested(s.body)
        self.emit("}")

    def visit_Assign(self, s: ir.Assign) -> None:
        value = self.expr(s.value)
        base, lanes = ir.split_dtype(s.var.dtype)
        if dt.computed_in_float32(base):   # a register holds what memory would: the value rounded
            value = f"ts_round_{dt.info(base).suffix}({value})" if lanes == 1 else \
                f"ts_vround_{memory_vector_type(s.var.dtype)}({value})"
        self.emit(f"{self.name(s.var, s.var.name)} = {value};")

    def visit_LetStmt(self, s: ir.LetStmt) -> None:
        """A chain of lets as constants of one block (a loop: chains of thousands are not nested)."""
        self.emit("{")
        chain, inner = let_chain(s)
        saved = self.exprs.ranges
        for let in chain:
            ctype = "int64_t" if isinstance(let.var, ir.LoopVar) else c_type(let.var.dtype)
            self.emit(f"const {ctype} {self.name(let.var, let.var.name)} = {self.expr(let.value)};", 1)
            if let.value.dtype in INDEX_TYPES:
                self.exprs.ranges = self.exprs.ranges.where(let.var, *bound(let.value, self.exprs.ranges))
        ranges, self.exprs.ranges = self.exprs.ranges, saved
        self.nested(inner, ranges)
        self.emit("}")

    def visit_Timer(self, s: ir.Timer) -> None:
        start, elapsed = f"ts_prof_t{s.slot}", f"ts_prof_dt{s.slot}"
        self.emit("{")
        self.emit(f"const double {start} = ts_prof_now();", 1)
        self.nested(s.body)
        self.emit(f"const double {elapsed} = ts_prof_now() - {start};", 1)
        for counter, step in (("ts_prof_seconds", elapsed), ("ts_prof_calls", "1")):
            if s.parallel:
                self.emit("#pragma omp atomic", 1)
            self.emit(f"{counter}[{s.slot}] += {step};", 1)
        self.emit("}")

    def visit_Produce(self, s: ir.Produce) -> None:
        self.emit(f"/* produce {sanitize(s.stage)} */")
        self.visit(s.body)

    def visit_For(self, s: ir.For) -> None:
        ranges = loop_range(s, self.exprs.ranges)
        bases, changing = loop_bases(s, ranges) if s.kind is not LoopKind.PARALLEL else ([], set())
        self.declared.extend(var for var, _ in bases)     # alive while named (names are keyed by identity)
        for var, value in bases:
            self.emit(f"const int64_t {self.name(var, var.name)} = {self.exprs.index(value)};")
        if s.kind is LoopKind.PARALLEL:
            threads = f" num_threads({self.target.threads})" if self.target.threads else ""
            self.emit(f"#pragma omp parallel for schedule(static){threads}")
        elif s.kind is LoopKind.VECTORIZED and not s.reduction:  # a reduction left scalar stays sequential
            self.emit("#pragma omp simd")
        elif s.kind is LoopKind.UNROLLED and s.extent_hint and not any(k == "unroll" for k, _ in s.pragmas):
            self.emit(f"#pragma GCC unroll {min(s.extent_hint, 64)}")
        for hint, setting in s.pragmas:     # whitelisted by Stage.pragma: only a flag or an int reaches C
            if hint == "ivdep":
                self.emit("#pragma GCC ivdep")
            elif hint == "unroll":
                self.emit(f"#pragma GCC unroll {int(setting)}")
        v = self.name(s.var, s.var.name)
        step = f"{v}++" if s.step == 1 else f"{v} += {s.step}"
        self.emit(f"for (int64_t {v} = {self.expr(s.begin)}; {v} < {self.expr(s.end)}; {step}) {{")
        saved, self.exprs.bases = self.exprs.bases, ({structural_key(value): var for var, value in bases}, changing)
        self.nested(s.body, ranges)
        self.exprs.bases = saved
        self.emit("}")

    def visit_Allocate(self, s: ir.Allocate) -> None:
        b = s.buffer
        ctype = dt.C_TYPES[b.dtype]
        name = self.name(b, b.name)
        self.emit("{")
        for off in b.offsets:
            if isinstance(off, ir.OriginVar):
                self.emit(f"int64_t {self.name(off, off.name)} = 0;", 1)
        count: int | None = None
        on_stack = False
        sizes = b.constant_shape()
        if sizes is not None:
            count = b.element_count()   # padded strides (storage_align): more than the shape's product
            assert count is not None
            on_stack = count * dt.itemsize(b.dtype) <= STACK_LIMIT
        if on_stack and _read_under_select(b, s.body):
            # gcc -O3 (12.2) if-converts a select's read of a stack array into a read it may do always,
            # then reasons from the array's bounds that the select's condition holds: wrong padded values.
            # Through an opaque pointer the array is any memory, as an argument is, and the read stays
            # conditional.
            self.emit(f"{ctype} {name}_storage[{count}] __attribute__((aligned(TS_ALIGN)));", 1)
            self.emit(f"{ctype} *restrict {name} = {name}_storage;", 1)
            self.emit(f"TS_OPAQUE({name});", 1)
            self.nested(s.body)
        elif on_stack:
            self.emit(f"{ctype} {name}[{count}] __attribute__((aligned(TS_ALIGN)));", 1)
            self.nested(s.body)
        else:
            self.allocations.append(b)
            size = "1"
            for d in ([count] if b.aligns and count is not None else b.shape):
                size = f"ts_mul_checked({size}, {self.dim(d)})"
            self.emit(f"{ctype} *restrict {name} = ({ctype} *)ts_alloc_elems(sizeof({ctype}), {size});", 1)
            if _read_under_select(b, s.body):   # as for a stack array: gcc knows the allocation's size
                self.emit(f"TS_OPAQUE({name});", 1)
            self.emit(f"if ({name} == NULL) {{", 1)
            self.emit("#pragma omp atomic write", 2)
            self.emit(f"{self.status} = {len(self.allocations)};", 2)
            self.emit("} else {", 1)
            self.indent += 1
            self.nested(s.body)
            self.emit(f"ts_free({name});", 1)
            self.indent -= 1
            self.emit("}", 1)
        self.emit("}")

    # function -------------------------------------------------------------------------------------
    def function(self) -> CSource:
        f = self.func
        calls = [s for s in walk_stmts(f.body) if isinstance(s, ir.IntrinsicCall)]
        self.names.taken.update(c.function for c in calls)   # the intrinsics' C functions keep their names
        for call in calls:
            self.names.taken.update(re.findall(r"\b[A-Za-z_]\w*\b", call.intrin.impl.source))
        externs = extern_calls(f)       # the user's C functions keep their names, and so do their sources'
        self.names.taken.update(e.name for e in externs)
        self.names.taken.update(n for e in externs for n in re.findall(r"\b[A-Za-z_]\w*\b", e.source or ""))
        fname = self.names.fresh(f.name)
        params = [f"{dt.C_TYPES[b.dtype]} *restrict {self.name(b, b.name)}" for b in f.args]
        params += [f"int64_t {self.name(p, p.name)}" for p in f.params]
        params += [f"{dt.C_TYPES[p.dtype]} {self.name(p, p.name)}" for p in f.scalars]
        decl_types = [f"{dt.C_TYPES[b.dtype]} *" for b in f.args] + ["int64_t"] * len(f.params) \
            + [dt.C_TYPES[p.dtype] for p in f.scalars]
        self.visit(f.body)
        sources = [extern_text(externs, 3, f"{fname}.c")] if externs else []    # from line 3, after the include
        sources += [f"/* tensor intrinsic {sanitize(i.name)} */\n{i.impl.source}" for i in self.intrinsics
                    if i.impl.source]     # (an extern stage's function comes with the extern sources)
        declaration = f"int {fname}({', '.join(decl_types) or 'void'});"
        argv = self.names.fresh(fname + ARGV_SUFFIX)
        declaration += f"\n{argv_prototype(argv)};"
        slots = 1 + max((s.slot for s in walk_stmts(f.body) if isinstance(s, ir.Timer)), default=-1)
        profile = self.names.fresh(f"{fname}_profile") if slots else ""
        if slots:
            sources.append(_profile_counters(profile, slots))
            declaration += f"\nvoid {profile}(double *, int64_t *, int64_t);"
        body = [f"  int {self.status} = 0;"] + self.lines + [f"  return {self.status};"]
        attributes = "TS_NO_IF_CONVERT " if branches_on_data(f.body) else ""
        source = "\n".join(['#include "tesched_runtime.h"', ""] + sources + ["",
                            f"{attributes}int {fname}({', '.join(params) or 'void'}) {{"] + body + ["}", "",
                            argv_function(fname, decl_types, argv), ""])
        return CSource(fname, source, declaration, profile, tuple(self.allocations), tuple(self.exprs.checks), argv)


def _profile_counters(reader: str, slots: int) -> str:
    """The counters of ``slots`` timers, a monotonic clock, and ``reader(seconds, calls, reset)`` that
    copies the counters out (and zeroes them when ``reset``)."""
    return "\n".join([
        "/* profile counters (build(..., profile=True)) */",
        "#include <time.h>",
        f"static double ts_prof_seconds[{slots}];",
        f"static int64_t ts_prof_calls[{slots}];",
        "static inline double ts_prof_now(void) {",
        "  struct timespec t;",
        "  clock_gettime(CLOCK_MONOTONIC, &t);",
        "  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;",
        "}",
        f"void {reader}(double *seconds, int64_t *calls, int64_t reset) {{",
        f"  for (int64_t k = 0; k < {slots}; k++) {{",
        "    seconds[k] = ts_prof_seconds[k];",
        "    calls[k] = ts_prof_calls[k];",
        "    if (reset) { ts_prof_seconds[k] = 0.0; ts_prof_calls[k] = 0; }",
        "  }",
        "}",
    ])


def generate_c(func: LoweredFunc, reserved: frozenset[str] = frozenset(), target: Target | None = None) -> CSource:
    """C source for a lowered function finished for ``target``; no generated name is one of ``reserved``
    (the compiler's own identifiers, see :func:`tesched.driver.compiler.reserved_identifiers`) nor an
    identifier of an intrinsic's source."""
    return CodeGen(func, reserved, target or current_target()).function()
