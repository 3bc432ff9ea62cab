"""Loop IR -> C99 source.

One function per lowered program: ``void name(T* restrict arg, ..., int64_t size...)``. Loops carry their
kind as pragmas: ``parallel`` -> ``#pragma omp parallel for``, ``vectorized`` -> ``#pragma omp simd``,
``unrolled`` -> ``#pragma GCC unroll``. Index arithmetic is ``int64_t``; tensor coordinates are flattened
row-major, minus a local buffer's origin. Local buffers of constant size up to :data:`STACK_LIMIT` bytes
live on the stack (aligned), larger ones on the heap. Every identifier comes from
:class:`~tesched.names.NameTable`. This module knows nothing of isl or cffi.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from tesched.codegen.names import NameTable, sanitize
from tesched.ir import nodes as ir
from tesched.lower.pipeline import LoweredFunc
from tesched.schedule.kinds import LoopKind
from tesched.te import dtype as dt
from tesched.te.expr import Binary, Call, Cast, Const, Expr, Select, Unary, Var

STACK_LIMIT = 128 * 1024

_C_BINARY = {"add": "+", "sub": "-", "mul": "*", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
             "eq": "==", "ne": "!=", "and": "&&", "or": "||", "cdiv": "/", "cmod": "%"}
_SUFFIX = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "bool": "bool"}
_FLOAT_FN = {"exp": "exp", "log": "log", "sqrt": "sqrt", "tanh": "tanh", "floor": "floor", "ceil": "ceil",
             "abs": "fabs"}


@dataclass
class CSource:
    """Generated C: the full ``source``, the ``declaration`` for cffi, and the function's C name."""

    name: str
    source: str
    declaration: str


def c_type(dtype: str) -> str:
    base, lanes = ir.split_dtype(dtype)
    return dt.C_TYPES[base] if lanes == 1 else f"ts_{_SUFFIX[base]}x{lanes}"


def _vec(dtype: str) -> str:
    """The ``f32x16`` part of a vector helper's name."""
    base, lanes = ir.split_dtype(dtype)
    return f"{_SUFFIX[base]}x{lanes}"


def c_const(c: Const) -> str:
    v = c.value
    if c.dtype == "bool":
        return "1" if v else "0"
    if dt.is_float(c.dtype):
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "INFINITY" if v > 0 else "(-INFINITY)"
        text = repr(float(np.float32(v))) if c.dtype == "float32" else repr(float(v))
        if "e" not in text and "." not in text:
            text += ".0"
        return f"{text}f" if c.dtype == "float32" else text
    if c.dtype == "int64" and not -(2**31) < v < 2**31:
        return f"INT64_C({v})"
    return str(v) if v != -(2**31) else "(-2147483647 - 1)"


class CodeGen:
    def __init__(self, func: LoweredFunc, reserved: frozenset[str] = frozenset()):
        self.func = func
        self.names = NameTable(tuple(reserved))
        self.lines: list[str] = []
        self.intrinsics: list = []

    def name(self, obj: object, hint: str) -> str:
        return self.names.get(obj, hint)

    # expressions ----------------------------------------------------------------------------------
    def expr(self, e: Expr) -> str:
        if isinstance(e, Const):
            return c_const(e)
        if isinstance(e, Var):
            return self.name(e, e.name)
        if isinstance(e, ir.Load):
            return self.element(e.buffer, e.indices)
        if isinstance(e, ir.Address):
            return "&" + self.element(e.buffer, e.indices)
        if isinstance(e, ir.VLoad):
            return f"ts_vload_{_vec(e.dtype)}(&{self.name(e.buffer, e.buffer.name)}[{self.expr(e.index)}])"
        if isinstance(e, ir.Broadcast):
            return f"ts_vbcast_{_vec(e.dtype)}({self.expr(e.value)})"
        if isinstance(e, ir.HReduce):
            return f"ts_h{e.op}_{_vec(e.value.dtype)}({self.expr(e.value)})"
        if isinstance(e, ir.VCast):
            return f"__builtin_convertvector({self.expr(e.value)}, {c_type(e.dtype)})"
        if isinstance(e, Binary):
            return self.binary(e)
        if isinstance(e, Unary):
            if e.op == "neg":
                return f"(-{self.expr(e.a)})"
            return f"(~{self.expr(e.a)})" if ir.split_dtype(e.dtype)[1] > 1 else f"(!{self.expr(e.a)})"
        if isinstance(e, Cast):
            if e.dtype == "bool":
                return f"({self.expr(e.value)} != 0)"
            return f"(({dt.C_TYPES[e.dtype]})({self.expr(e.value)}))"
        if isinstance(e, Select):
            if ir.split_dtype(e.dtype)[1] > 1:
                return (f"ts_vsel_{_vec(e.dtype)}({self.expr(e.cond)}, {self.expr(e.true_value)}, "
                        f"{self.expr(e.false_value)})")
            return f"({self.expr(e.cond)} ? {self.expr(e.true_value)} : {self.expr(e.false_value)})"
        if isinstance(e, Call):
            return self.call(e)
        raise TypeError(f"cannot generate C for {type(e).__name__}")

    def binary(self, e: Binary) -> str:
        a, b = self.expr(e.a), self.expr(e.b)
        operand = e.a.dtype
        if ir.split_dtype(operand)[1] > 1:
            if e.op in ("min", "max"):
                return f"ts_v{e.op}_{_vec(operand)}({a}, {b})"
            sym = {"and": "&", "or": "|", "div": "/"}.get(e.op) or _C_BINARY[e.op]
            return f"({a} {sym} {b})"
        if e.op in _C_BINARY:
            return f"({a} {_C_BINARY[e.op]} {b})"
        if e.op == "div":
            return f"({a} / {b})"
        if e.op in ("min", "max"):
            return f"ts_{e.op}_{_SUFFIX[e.dtype if e.dtype != 'bool' else operand]}({a}, {b})"
        if e.op == "floordiv":
            if dt.is_float(operand):
                return f"{'floorf' if operand == 'float32' else 'floor'}({a} / {b})"
            return f"ts_floordiv({a}, {b})"
        if e.op == "floormod":
            if dt.is_float(operand):
                fl = "floorf" if operand == "float32" else "floor"
                return f"({a} - {fl}({a} / {b}) * {b})"
            return f"ts_floormod({a}, {b})"
        raise TypeError(f"unknown binary operation {e.op}")

    def call(self, e: Call) -> str:
        args = ", ".join(self.expr(a) for a in e.args)
        if e.name == "sigmoid":
            return f"ts_sigmoid_{_SUFFIX[e.dtype]}({args})"
        if e.name == "abs" and not dt.is_float(e.dtype):
            return f"ts_abs_{_SUFFIX[e.dtype]}({args})"
        base = _FLOAT_FN[e.name]
        return f"{base}{'f' if e.dtype == 'float32' else ''}({args})"

    def dim(self, d: int | Expr) -> str:
        return str(d) if isinstance(d, int) else self.expr(d)

    def element(self, buf: ir.Buffer, indices: tuple) -> str:
        """``buf[flat index of indices]`` in C."""
        return f"{self.name(buf, buf.name)}[{self.expr(ir.flat_index(buf, indices))}]"

    # statements -----------------------------------------------------------------------------------
    def emit(self, line: str, indent: int) -> None:
        self.lines.append("  " * indent + line)

    def stmt(self, s: ir.Stmt, ind: int) -> None:
        if isinstance(s, ir.Block):
            for c in s.stmts:
                self.stmt(c, ind)
        elif isinstance(s, ir.For):
            self.loop(s, ind)
        elif isinstance(s, ir.IfThenElse):
            self.emit(f"if ({self.expr(s.cond)}) {{", ind)
            self.stmt(s.then_case, ind + 1)
            if s.else_case is not None:
                self.emit("} else {", ind)
                self.stmt(s.else_case, ind + 1)
            self.emit("}", ind)
        elif isinstance(s, ir.Store):
            self.emit(f"{self.element(s.buffer, s.indices)} = {self.expr(s.value)};", ind)
        elif isinstance(s, ir.VStore):
            target = f"&{self.name(s.buffer, s.buffer.name)}[{self.expr(s.index)}]"
            self.emit(f"ts_vstore_{_vec(s.value.dtype)}({target}, {self.expr(s.value)});", ind)
        elif isinstance(s, ir.IntrinsicCall):
            if all(i is not s.intrin for i in self.intrinsics):
                self.intrinsics.append(s.intrin)
            self.emit(f"{s.function}({', '.join(self.expr(a) for a in s.args)});", ind)
        elif isinstance(s, ir.Registers):
            self.emit("{", ind)
            for v in s.variables:
                self.emit(f"{c_type(v.dtype)} {self.name(v, v.name)};", ind + 1)
            self.stmt(s.body, ind + 1)
            self.emit("}", ind)
        elif isinstance(s, ir.Allocate):
            self.allocate(s, ind)
        elif isinstance(s, ir.Assign):
            self.emit(f"{self.name(s.var, s.var.name)} = {self.expr(s.value)};", ind)
        elif isinstance(s, ir.LetStmt):
            self.emit("{", ind)
            self.emit(f"const int64_t {self.name(s.var, s.var.name)} = {self.expr(s.value)};", ind + 1)
            self.stmt(s.body, ind + 1)
            self.emit("}", ind)
        elif isinstance(s, ir.Produce):
            self.emit(f"/* produce {sanitize(s.stage)} */", ind)
            self.stmt(s.body, ind)
        else:
            raise TypeError(f"cannot generate C for {type(s).__name__}")

    def loop(self, s: ir.For, ind: int) -> None:
        if s.kind is LoopKind.PARALLEL:
            self.emit("#pragma omp parallel for schedule(static)", ind)
        elif s.kind is LoopKind.VECTORIZED and not s.reduction:  # a reduction left scalar stays sequential
            self.emit("#pragma omp simd", ind)
        elif s.kind is LoopKind.UNROLLED and s.extent_hint:
            self.emit(f"#pragma GCC unroll {min(s.extent_hint, 64)}", ind)
        v = self.name(s.var, s.var.name)
        step = f"{v}++" if s.step == 1 else f"{v} += {s.step}"
        self.emit(f"for (int64_t {v} = {self.expr(s.begin)}; {v} < {self.expr(s.end)}; {step}) {{", ind)
        self.stmt(s.body, ind + 1)
        self.emit("}", ind)

    def allocate(self, s: ir.Allocate, ind: int) -> None:
        b = s.buffer
        ctype = dt.C_TYPES[b.dtype]
        name = self.name(b, b.name)
        self.emit("{", ind)
        for off in b.offsets:
            if isinstance(off, ir.OriginVar):
                self.emit(f"int64_t {self.name(off, off.name)} = 0;", ind + 1)
        if all(isinstance(d, int) for d in b.shape):
            count = int(np.prod([int(d) for d in b.shape], dtype=np.int64))
            on_stack = count * dt.numpy_dtype(b.dtype).itemsize <= STACK_LIMIT
        else:
            count, on_stack = None, False
        if on_stack:
            self.emit(f"{ctype} {name}[{count}] __attribute__((aligned(TS_ALIGN)));", ind + 1)
        else:
            size = str(count) if count is not None else " * ".join(f"(size_t)({self.dim(d)})" for d in b.shape)
            self.emit(f"{ctype} *restrict {name} = ({ctype} *)ts_alloc(sizeof({ctype}) * {size});", ind + 1)
        self.stmt(s.body, ind + 1)
        if not on_stack:
            self.emit(f"ts_free({name});", ind + 1)
        self.emit("}", ind)

    # function -------------------------------------------------------------------------------------
    def function(self) -> CSource:
        f = self.func
        calls: list[str] = []
        ir.map_stmt(f.body, lambda e: e, lambda s: calls.append(s.function) if isinstance(s, ir.IntrinsicCall) else None)
        self.names.taken.update(calls)   # the intrinsics' C functions keep their names
        intrinsics: list = []
        ir.map_stmt(f.body, lambda e: e, lambda s: intrinsics.append(s.intrin) if isinstance(s, ir.IntrinsicCall) else None)
        for intrin in intrinsics:
            self.names.taken.update(re.findall(r"\b[A-Za-z_]\w*\b", intrin.impl.source))
        fname = self.names.fresh(f.name)
        params = [f"{dt.C_TYPES[b.dtype]} *restrict {self.name(b, b.name)}" for b in f.args]
        params += [f"int64_t {self.name(p, p.name)}" for p in f.params]
        decl_types = [f"{dt.C_TYPES[b.dtype]} *" for b in f.args] + ["int64_t"] * len(f.params)
        self.stmt(f.body, 1)
        sources = [f"/* tensor intrinsic {sanitize(i.name)} */\n{i.impl.source}" for i in self.intrinsics]
        source = "\n".join(['#include "tesched_runtime.h"', ""] + sources + ["",
                            f"void {fname}({', '.join(params) or 'void'}) {{"] + self.lines + ["}", ""])
        declaration = f"void {fname}({', '.join(decl_types) or 'void'});"
        return CSource(fname, source, declaration)


def generate_c(func: LoweredFunc, reserved: frozenset[str] = frozenset()) -> CSource:
    """C source for a lowered function; no generated name is one of ``reserved`` (the compiler's own
    identifiers, see :func:`tesched.builder.reserved_identifiers`) nor an identifier of an intrinsic's
    source."""
    return CodeGen(func, reserved).function()
