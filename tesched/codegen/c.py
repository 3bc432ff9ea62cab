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

import math
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tesched.arith.interval import INDEX_TYPES, VarRanges, bound
from tesched.arith.simplify import simplify
from tesched.codegen.hoist import Bases, loop_bases, with_bases
from tesched.codegen.names import NameTable, sanitize
from tesched.ir import nodes as ir
from tesched.ir.visitor import walk_stmts
from tesched.lower.func import LoweredFunc
from tesched.schedule.kinds import LoopKind
from tesched.target import Target, current_target
from tesched.te import dtype as dt
from tesched.te.expr import Binary, Call, Cast, Const, Expr, Select, Unary, Var
from tesched.te.intrinsic import TensorIntrin
from tesched.te.visit import NodeFunctor, structural_key
from tesched.transform.simplify_indices import loop_range, refine

STACK_LIMIT = 128 * 1024

_C_BINARY = {"add": "+", "sub": "-", "mul": "*", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
             "eq": "==", "ne": "!=", "and": "&&", "or": "||", "cdiv": "/", "cmod": "%", "bitand": "&",
             "bitor": "|", "bitxor": "^"}
_VECTOR_BINARY = {"and": "&", "or": "|", "div": "/", "shl": "<<", "shr": ">>"}
_FLOAT_FN = {"exp": "exp", "log": "log", "sqrt": "sqrt", "tanh": "tanh", "floor": "floor", "ceil": "ceil",
             "abs": "fabs", "rint": "rint", "trunc": "trunc", "pow": "pow", "fmod": "fmod"}


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


def _suffix(dtype: str) -> str:
    """The runtime header's name of the C type values of scalar ``dtype`` have (``f32`` for float16)."""
    return "f32" if dt.computed_in_float32(dtype) else dt.info(dtype).suffix


def c_type(dtype: str) -> str:
    """The C type of a value of ``dtype`` (scalar or vector) inside an expression or a register."""
    base, lanes = ir.split_dtype(dtype)
    return dt.info(base).value_c_type if lanes == 1 else f"ts_{_suffix(base)}x{lanes}"


def _vec(dtype: str) -> str:
    """The ``f32x16`` part of a vector helper's name (the type values are computed in)."""
    base, lanes = ir.split_dtype(dtype)
    return f"{_suffix(base)}x{lanes}"


def _mem_vec(dtype: str) -> str:
    """The ``f16x16`` part of a vector load's or store's name (the type elements have in memory)."""
    base, lanes = ir.split_dtype(dtype)
    return f"{dt.info(base).suffix}x{lanes}"


def _wrapped(dtype: str, text: str) -> str:
    """C text of an integer result brought back into ``dtype``'s range (C computes narrow types in int)."""
    return f"(({dt.C_TYPES[dtype]})({text}))" if dt.wraps(dtype) else text


def _wide_operand(dtype: str, text: str) -> str:
    """An operand of narrow integer arithmetic widened so that C computes without overflow (uint16 *
    uint16 would overflow ``int``)."""
    if not dt.wraps(dtype):
        return text
    return f"(uint32_t)({text})" if dt.is_unsigned(dtype) else f"(int32_t)({text})"


def c_const(c: Const) -> str:
    v = c.value
    if c.dtype == "bool":
        return "1" if v else "0"
    if dt.is_float(c.dtype):
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "INFINITY" if v > 0 else "(-INFINITY)"
        single = dt.info(c.dtype).value_c_type == "float"
        text = repr(float(np.float32(v))) if single else repr(float(v))
        if "e" not in text and "." not in text:
            text += ".0"
        return f"{text}f" if single else text
    if c.dtype == "int64" and not -(2**31) < v < 2**31:
        return f"INT64_C({v})"
    if c.dtype == "uint32":
        return f"{v}u"
    return str(v) if v != -(2**31) else "(-2147483647 - 1)"


def vector_floor_division(op: str, a: str, divisor: Expr) -> str:
    """C text of vector ``a // c`` or ``a % c`` for a broadcast positive constant ``c`` (the vectorizer
    only makes these when ``c`` is a power of two, where a shift and a mask floor any integer, or the
    operands are unsigned, where C's division is the floor)."""
    c = int(divisor.value.value) if isinstance(divisor, ir.Broadcast) and isinstance(divisor.value, Const) else 0
    if c <= 0:
        raise TypeError(f"vector {op} needs a positive constant divisor")
    if c & (c - 1) == 0:
        return f"({a} >> {c.bit_length() - 1})" if op == "floordiv" else f"({a} & {c - 1})"
    return f"({a} {'/' if op == 'floordiv' else '%'} {c})"


SATURATING_SOURCES = ("int16", "int32")
"""Signed lanes whose clamp-and-narrow (``saturate_cast``) the runtime header packs with saturation."""


def saturating_narrow(e: ir.VCast) -> Expr | None:
    """The operand ``x`` when ``e`` is ``cast(min(max(x, low), high))`` to a narrower integer type whose range
    is exactly ``[low, high]`` (what ``saturate_cast`` builds) from int16 or int32 lanes, else None."""
    target = ir.split_dtype(e.dtype)[0]
    inner = e.value
    if not (isinstance(inner, Binary) and inner.op == "min" and isinstance(inner.a, Binary) and inner.a.op == "max"):
        return None
    source = ir.split_dtype(inner.dtype)[0]
    if source not in SATURATING_SOURCES or dt.is_float(target) or target == "bool" \
            or dt.itemsize(target) >= dt.itemsize(source):
        return None
    bounds = [b.value.value if isinstance(b, ir.Broadcast) and isinstance(b.value, Const) else None
              for b in (inner.a.b, inner.b)]
    return inner.a.a if tuple(bounds) == dt.value_range(target) else None


class CExpr(NodeFunctor):
    """C text of an expression (int64 index arithmetic, GCC vector helpers of the runtime header)."""

    def __init__(self, names: NameTable, status: str = ""):
        self.names = names
        self.status = status            # the kernel's status variable (checked indices write it)
        self.checks: list[str] = []     # messages of checked indices, by -code - 1
        self.ranges = VarRanges()     # of the loops around the statement being written
        self.bases: tuple[Bases, set[int]] = ({}, set())   # offsets named before the innermost loop

    def name(self, obj: object, hint: str) -> str:
        return self.names.get(obj, hint)

    def text(self, e: Expr) -> str:
        return self.visit(e)

    def visit_CheckedIndex(self, e: ir.CheckedIndex) -> str:
        if not self.status:
            raise TypeError("a checked index outside a kernel body")
        if e.message not in self.checks:
            self.checks.append(e.message)
        code = -1 - self.checks.index(e.message)
        extent = str(e.extent) if isinstance(e.extent, int) else f"(int64_t)({self.text(e.extent)})"
        return f"ts_check_index((int64_t)({self.text(e.value)}), {extent}, &{self.status}, {code})"

    def index(self, e: Expr) -> str:
        """C text of an element offset, simplified under the ranges of the enclosing loops (and written
        with the variable of its loop-invariant part when the innermost loop named one)."""
        e = simplify(e, self.ranges)
        return self.text(with_bases(e, *self.bases) if self.bases[0] else e)

    def element(self, buf: ir.Buffer, indices: Sequence[Expr]) -> str:
        """``buf[flat index of indices]`` in C."""
        return f"{self.name(buf, buf.name)}[{self.index(ir.flat_index(buf, indices))}]"

    def visit_Const(self, e: Const) -> str:
        return c_const(e)

    def visit_Var(self, e: Var) -> str:
        return self.name(e, e.name)

    def visit_Load(self, e: ir.Load) -> str:
        if dt.computed_in_float32(e.buffer.dtype):
            return f"ts_load_{dt.info(e.buffer.dtype).suffix}({self.element(e.buffer, e.indices)})"
        return self.element(e.buffer, e.indices)

    def visit_Address(self, e: ir.Address) -> str:
        return "&" + self.element(e.buffer, e.indices)

    def visit_VLoad(self, e: ir.VLoad) -> str:
        return f"ts_vload_{_mem_vec(e.dtype)}(&{self.name(e.buffer, e.buffer.name)}[{self.index(e.index)}])"

    def visit_VLoadStrided(self, e: ir.VLoadStrided) -> str:
        return (f"ts_vloads_{_mem_vec(e.dtype)}(&{self.name(e.buffer, e.buffer.name)}[{self.index(e.index)}], "
                f"{self.index(e.stride)})")

    def visit_VLoadMasked(self, e: ir.VLoadMasked) -> str:
        return (f"ts_vloadm_{_mem_vec(e.dtype)}(&{self.name(e.buffer, e.buffer.name)}[{self.index(e.index)}], "
                f"{self.text(e.mask)})")

    def visit_Ramp(self, e: ir.Ramp) -> str:
        return f"ts_vramp_{_vec(e.dtype)}({self.text(e.base)})"

    def visit_Broadcast(self, e: ir.Broadcast) -> str:
        return f"ts_vbcast_{_vec(e.dtype)}({self.text(e.value)})"

    def visit_HReduce(self, e: ir.HReduce) -> str:
        return f"ts_h{e.op}_{_vec(e.value.dtype)}({self.text(e.value)})"

    def visit_VCast(self, e: ir.VCast) -> str:
        clamped = saturating_narrow(e)
        if clamped is not None:
            return f"ts_vsat_{_vec(clamped.dtype)}_{dt.info(ir.split_dtype(e.dtype)[0]).suffix}({self.text(clamped)})"
        text = f"__builtin_convertvector({self.text(e.value)}, {c_type(e.dtype)})"
        if dt.computed_in_float32(ir.split_dtype(e.dtype)[0]):
            return f"ts_vround_{_mem_vec(e.dtype)}({text})"
        return text

    def visit_Unary(self, e: Unary) -> str:
        if e.op == "neg" and ir.split_dtype(e.dtype)[1] > 1:
            return f"(-{self.text(e.a)})"   # vector lanes wrap in their own type
        if e.op == "neg":
            return _wrapped(e.dtype, f"(-{_wide_operand(e.dtype, self.text(e.a))})")
        if e.op == "bitnot" and ir.split_dtype(e.dtype)[1] == 1:
            return _wrapped(e.dtype, f"(~{self.text(e.a)})")
        return f"(~{self.text(e.a)})" if ir.split_dtype(e.dtype)[1] > 1 else f"(!{self.text(e.a)})"

    def visit_Cast(self, e: Cast) -> str:
        if e.dtype == "bool":
            return f"({self.text(e.value)} != 0)"
        if dt.computed_in_float32(e.dtype):
            source = "_f64" if e.value.dtype == "float64" and e.dtype == "float16" else ""   # NumPy: one rounding
            return f"ts_round_{dt.info(e.dtype).suffix}{source}({self.text(e.value)})"
        return f"(({c_type(e.dtype)})({self.text(e.value)}))"

    def visit_Select(self, e: Select) -> str:
        cond, yes, no = self.text(e.cond), self.text(e.true_value), self.text(e.false_value)
        if ir.split_dtype(e.dtype)[1] > 1 and ir.split_dtype(e.cond.dtype)[1] > 1:
            return f"ts_vsel_{_vec(e.dtype)}({cond}, {yes}, {no})"
        return f"({cond} ? {yes} : {no})"

    def visit_Binary(self, e: Binary) -> str:
        a, b = self.text(e.a), self.text(e.b)
        operand = e.a.dtype
        if ir.split_dtype(operand)[1] > 1:
            if e.op in ("min", "max"):
                return f"ts_v{e.op}_{_vec(operand)}({a}, {b})"
            if e.op in ("floordiv", "floormod"):
                return vector_floor_division(e.op, a, e.b)
            sym = _VECTOR_BINARY.get(e.op) or _C_BINARY[e.op]
            return f"({a} {sym} {b})"
        if e.op in ("add", "sub", "mul") and dt.wraps(operand):
            return _wrapped(operand, f"({_wide_operand(operand, a)} {_C_BINARY[e.op]} {b})")
        if e.op in _C_BINARY:
            return f"({a} {_C_BINARY[e.op]} {b})"
        if e.op in ("shl", "shr"):   # NumPy's shifts: an amount outside [0, bits) is defined
            return f"(({c_type(operand)})ts_{e.op}({a}, {b}, {dt.info(operand).bits}))"
        if e.op == "div":
            return f"({a} / {b})"
        if e.op in ("min", "max"):
            return f"ts_{e.op}_{_suffix(e.dtype if e.dtype != 'bool' else operand)}({a}, {b})"
        single = dt.info(operand).value_c_type == "float"
        if e.op in ("floordiv", "floormod") and operand in INDEX_TYPES and isinstance(e.b, Const) \
                and e.b.value > 0 and bound(e.a, self.ranges)[0] >= 0:   # C's / and % floor non-negatives
            return f"({a} {'/' if e.op == 'floordiv' else '%'} {b})"
        if e.op == "floordiv":
            if dt.is_float(operand):
                return f"{'floorf' if single else 'floor'}({a} / {b})"
            return _wrapped(operand, f"ts_floordiv({a}, {b})")
        if e.op == "floormod":
            if dt.is_float(operand):
                fl = "floorf" if single else "floor"
                return f"({a} - {fl}({a} / {b}) * {b})"
            return _wrapped(operand, f"ts_floormod({a}, {b})")
        raise TypeError(f"unknown binary operation {e.op}")

    def visit_Call(self, e: Call) -> str:
        args = ", ".join(self.text(a) for a in e.args)
        if ir.split_dtype(e.dtype)[1] > 1:   # a vector helper of the runtime header (dot products)
            return f"ts_{e.name}_{_vec(e.dtype)}({args})"
        if e.name == "sigmoid":
            return f"ts_sigmoid_{_suffix(e.dtype)}({args})"
        if e.name == "abs" and not dt.is_float(e.dtype):
            return f"ts_abs_{_suffix(e.dtype)}({args})"
        if e.name == "fmod" and not dt.is_float(e.dtype):
            return _wrapped(e.dtype, f"(({c_type(e.dtype)})ts_fmod({args}))")
        single = dt.info(e.dtype).value_c_type == "float"
        return f"{_FLOAT_FN[e.name]}{'f' if single else ''}({args})"


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
            assert isinstance(s.value, Binary) and s.value.op == "add", "an atomic store is an addition"
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
        self.emit(f"ts_vstore_{_mem_vec(s.value.dtype)}({target}, {self.expr(s.value)});")

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
                f"ts_vround_{_mem_vec(s.var.dtype)}({value})"
        self.emit(f"{self.name(s.var, s.var.name)} = {value};")

    def visit_LetStmt(self, s: ir.LetStmt) -> None:
        self.emit("{")
        ctype = "int64_t" if isinstance(s.var, ir.LoopVar) else c_type(s.var.dtype)
        self.emit(f"const {ctype} {self.name(s.var, s.var.name)} = {self.expr(s.value)};", 1)
        ranges = self.exprs.ranges
        if s.value.dtype in INDEX_TYPES:
            ranges = ranges.where(s.var, *bound(s.value, ranges))
        self.nested(s.body, ranges)
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
            count = int(np.prod(sizes, dtype=np.int64))
            if b.aligns:   # padded strides (storage_align): more elements than the shape's product
                count = b.strides()[0] * sizes[0]
            on_stack = count * dt.itemsize(b.dtype) <= STACK_LIMIT
        if on_stack:
            self.emit(f"{ctype} {name}[{count}] __attribute__((aligned(TS_ALIGN)));", 1)
            self.nested(s.body)
        else:
            self.allocations.append(b)
            size = "1"
            for d in ([count] if b.aligns and count is not None else b.shape):
                size = f"ts_mul_checked({size}, {self.dim(d)})"
            self.emit(f"{ctype} *restrict {name} = ({ctype} *)ts_alloc_elems(sizeof({ctype}), {size});", 1)
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
        fname = self.names.fresh(f.name)
        params = [f"{dt.C_TYPES[b.dtype]} *restrict {self.name(b, b.name)}" for b in f.args]
        params += [f"int64_t {self.name(p, p.name)}" for p in f.params]
        decl_types = [f"{dt.C_TYPES[b.dtype]} *" for b in f.args] + ["int64_t"] * len(f.params)
        self.visit(f.body)
        sources = [f"/* tensor intrinsic {sanitize(i.name)} */\n{i.impl.source}" for i in self.intrinsics]
        declaration = f"int {fname}({', '.join(decl_types) or 'void'});"
        slots = 1 + max((s.slot for s in walk_stmts(f.body) if isinstance(s, ir.Timer)), default=-1)
        profile = self.names.fresh(f"{fname}_profile") if slots else ""
        if slots:
            sources.append(_profile_counters(profile, slots))
            declaration += f"\nvoid {profile}(double *, int64_t *, int64_t);"
        body = [f"  int {self.status} = 0;"] + self.lines + [f"  return {self.status};"]
        source = "\n".join(['#include "tesched_runtime.h"', ""] + sources + ["",
                            f"int {fname}({', '.join(params) or 'void'}) {{"] + body + ["}", ""])
        return CSource(fname, source, declaration, profile, tuple(self.allocations), tuple(self.exprs.checks))


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
