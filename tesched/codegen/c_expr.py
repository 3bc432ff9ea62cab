"""Expressions of the loop IR as C99 text: :class:`CExpr` prints scalar and vector expressions (loads
with flattened, origin-relative indices; the runtime header's vector helpers; floor division and modulo
that match Python's; saturating casts), and the helpers that name C types and literals.

It knows each index variable's range (for C's own ``/`` and ``%`` where operands are non-negative) but
not statements, loops or functions: those are :mod:`.c`.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from tesched.arith.interval import INDEX_TYPES, VarRanges, bound
from tesched.arith.simplify import simplify
from tesched.codegen.hoist import Bases, with_bases
from tesched.codegen.names import NameTable
from tesched.ir import nodes as ir
from tesched.te import dtype as dt
from tesched.te.expr import BinOp, Binary, Call, Cast, Const, Expr, Select, Unary, Var
from tesched.te.extern import ExternCall
from tesched.te.visit import NodeFunctor, walk


_C_BINARY = {"add": "+", "sub": "-", "mul": "*", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
             "eq": "==", "ne": "!=", "and": "&&", "or": "||", "cdiv": "/", "cmod": "%", "bitand": "&",
             "bitor": "|", "bitxor": "^"}
_VECTOR_BINARY = {"and": "&", "or": "|", "div": "/", "shl": "<<", "shr": ">>"}
_BIT_COUNTS = {"popcount": "ts_popcount", "count_leading_zeros": "ts_clz", "count_trailing_zeros": "ts_ctz"}
_FLOAT_FN = {"exp": "exp", "log": "log", "log2": "log2", "log1p": "log1p", "erf": "erf", "sqrt": "sqrt", "tanh": "tanh", "floor": "floor", "ceil": "ceil",
             "abs": "fabs", "rint": "rint", "trunc": "trunc", "pow": "pow", "fmod": "fmod", "sin": "sin", "cos": "cos",
             "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh", "cosh": "cosh",
             "atan2": "atan2"}


def _suffix(dtype: str) -> str:
    """The runtime header's name of the C type values of scalar ``dtype`` have (``f32`` for float16)."""
    return "f32" if dt.computed_in_float32(dtype) else dt.info(dtype).suffix


def _lane_suffix(dtype: str) -> str:
    """The runtime header's name of the lanes of vectors of scalar ``dtype``: bool lanes are masks of all
    ones or all zeros in bytes (``i8``), as comparisons give; memory holds 0 or 1 (see ``VLoad``/``VStore``)."""
    return "i8" if dtype == "bool" else _suffix(dtype)


def c_type(dtype: str) -> str:
    """The C type of a value of ``dtype`` (scalar or vector) inside an expression or a register."""
    base, lanes = ir.split_dtype(dtype)
    return dt.info(base).value_c_type if lanes == 1 else f"ts_{_lane_suffix(base)}x{lanes}"


def _vec(dtype: str) -> str:
    """The ``f32x16`` part of a vector helper's name (the type values are computed in)."""
    base, lanes = ir.split_dtype(dtype)
    return f"{_lane_suffix(base)}x{lanes}"


def memory_vector_type(dtype: str) -> str:
    """The ``f16x16`` part of a vector load's or store's name (the type elements have in memory)."""
    base, lanes = ir.split_dtype(dtype)
    return f"{dt.info('int8' if base == 'bool' else base).suffix}x{lanes}"


def _as_mask(dtype: str, loaded: str) -> str:
    """A vector of ``dtype`` loaded from memory as C text: bool bytes (0 or 1) become masks."""
    return f"({loaded} != 0)" if ir.split_dtype(dtype)[0] == "bool" else loaded


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
    if not (isinstance(inner, Binary) and inner.op == BinOp.MIN and isinstance(inner.a, Binary) and inner.a.op == BinOp.MAX):
        return None
    source = ir.split_dtype(inner.dtype)[0]
    if source not in SATURATING_SOURCES or dt.is_float(target) or target == "bool" \
            or dt.itemsize(target) >= dt.itemsize(source):
        return None
    bounds = [b.value.value if isinstance(b, ir.Broadcast) and isinstance(b.value, Const) else None
              for b in (inner.a.b, inner.b)]
    return inner.a.a if tuple(bounds) == dt.value_range(target) else None

INT32_MAX = 2 ** 31 - 1


def _gathered(indices: Sequence[Expr]) -> bool:
    """Whether an index reads memory or converts a float (its value depends on data, not on loops)."""
    return any(isinstance(n, ir.Load) or (isinstance(n, Cast) and dt.is_float(n.value.dtype))
               for i in indices for n in walk(i))


class CExpr(NodeFunctor):
    """C text of an expression (int64 index arithmetic, GCC vector helpers of the runtime header)."""

    def __init__(self, names: NameTable, status: str = ""):
        self.names = names
        self.status = status            # the kernel's status variable (checked indices write it)
        self.checks: list[str] = []     # messages of checked indices, by -code - 1
        self.ranges = VarRanges()     # of the loops around the statement being written
        self.bases: tuple[Bases, set[int]] = ({}, set())   # offsets named before the innermost loop
        self.simd = False               # inside a loop left to gcc's vectorizer (``#pragma omp simd``)

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
        """``buf[flat index of indices]`` in C. Inside a ``#pragma omp simd`` loop, a data-dependent offset
        (a gather's) into a buffer of fewer than 2**31 elements is cast to ``int32``: the offset is inside
        the buffer (proved or checked), so the cast changes no value, and gcc 12 vectorizes gathers of
        32-bit offsets where it gives up on 64-bit ones."""
        offset = self.index(ir.flat_index(buf, indices))
        if self.simd and _gathered(indices) and (buf.element_count() or INT32_MAX + 1) <= INT32_MAX:
            offset = f"(int32_t)({offset})"
        return f"{self.name(buf, buf.name)}[{offset}]"

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
        return _as_mask(e.dtype, f"ts_vload_{memory_vector_type(e.dtype)}(&{self.name(e.buffer, e.buffer.name)}"
                                 f"[{self.index(e.index)}])")

    def visit_VLoadStrided(self, e: ir.VLoadStrided) -> str:
        return _as_mask(e.dtype, f"ts_vloads_{memory_vector_type(e.dtype)}(&{self.name(e.buffer, e.buffer.name)}"
                                 f"[{self.index(e.index)}], {self.index(e.stride)})")

    def visit_VLoadMasked(self, e: ir.VLoadMasked) -> str:
        return _as_mask(e.dtype, f"ts_vloadm_{memory_vector_type(e.dtype)}({self.name(e.buffer, e.buffer.name)}, "
                                 f"{self.index(e.index)}, {self.text(e.mask)})")

    def visit_VGather(self, e: ir.VGather) -> str:
        return f"ts_vgather_{memory_vector_type(e.dtype)}({self.name(e.buffer, e.buffer.name)}, {self.text(e.index)})"

    def visit_Ramp(self, e: ir.Ramp) -> str:
        return f"ts_vramp_{_vec(e.dtype)}({self.text(e.base)})"

    def visit_Broadcast(self, e: ir.Broadcast) -> str:
        value = self.text(e.value)
        if ir.split_dtype(e.dtype)[0] == "bool":
            value = f"-(int8_t)({value})"                      # a condition (0 or 1) as a lane mask
        return f"ts_vbcast_{_vec(e.dtype)}({value})"

    def visit_HReduce(self, e: ir.HReduce) -> str:
        return f"ts_h{e.op}_{_vec(e.value.dtype)}({self.text(e.value)})"

    def visit_Lane(self, e: ir.Lane) -> str:
        return f"({self.text(e.value)})[{e.index}]"      # GCC vector extensions index lanes

    def visit_VCast(self, e: ir.VCast) -> str:
        clamped = saturating_narrow(e)
        if clamped is not None:
            return f"ts_vsat_{_vec(clamped.dtype)}_{dt.info(ir.split_dtype(e.dtype)[0]).suffix}({self.text(clamped)})"
        text = f"__builtin_convertvector({self.text(e.value)}, {c_type(e.dtype)})"
        if dt.computed_in_float32(ir.split_dtype(e.dtype)[0]):
            return f"ts_vround_{memory_vector_type(e.dtype)}({text})"
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
            if e.op in (BinOp.MIN, BinOp.MAX):
                return f"ts_v{e.op}_{_vec(operand)}({a}, {b})"
            if e.op in (BinOp.FLOORDIV, BinOp.FLOORMOD):
                return vector_floor_division(e.op, a, e.b)
            sym = _VECTOR_BINARY.get(e.op) or _C_BINARY[e.op]
            return f"({a} {sym} {b})"
        if e.op in (BinOp.ADD, BinOp.SUB, BinOp.MUL) and dt.wraps(operand):
            return _wrapped(operand, f"({_wide_operand(operand, a)} {_C_BINARY[e.op]} {b})")
        if e.op in _C_BINARY:
            return f"({a} {_C_BINARY[e.op]} {b})"
        if e.op in (BinOp.SHL, BinOp.SHR):   # NumPy's shifts: an amount outside [0, bits) is defined
            return f"(({c_type(operand)})ts_{e.op}({a}, {b}, {dt.info(operand).bits}))"
        if e.op == BinOp.DIV:
            return f"({a} / {b})"
        if e.op in (BinOp.MIN, BinOp.MAX):
            return f"ts_{e.op}_{_suffix(e.dtype if e.dtype != 'bool' else operand)}({a}, {b})"
        single = dt.info(operand).value_c_type == "float"
        if e.op in (BinOp.FLOORDIV, BinOp.FLOORMOD) and operand in INDEX_TYPES and isinstance(e.b, Const) \
                and e.b.value > 0 and bound(e.a, self.ranges)[0] >= 0:   # C's / and % floor non-negatives
            return f"({a} {'/' if e.op == 'floordiv' else '%'} {b})"
        if e.op == BinOp.FLOORDIV:
            if dt.is_float(operand):
                return f"{'floorf' if single else 'floor'}({a} / {b})"
            return _wrapped(operand, f"ts_floordiv({a}, {b})")
        if e.op == BinOp.FLOORMOD:
            if dt.is_float(operand):
                fl = "floorf" if single else "floor"
                return f"({a} - {fl}({a} / {b}) * {b})"
            return _wrapped(operand, f"ts_floormod({a}, {b})")
        raise TypeError(f"unknown binary operation {e.op}")

    def visit_Call(self, e: Call) -> str:
        args = ", ".join(self.text(a) for a in e.args)
        if isinstance(e, ExternCall):     # the user's function (its source precedes the kernel)
            return f"(({c_type(e.dtype)}){e.name}({args}))"
        if ir.split_dtype(e.dtype)[1] > 1:   # a vector helper of the runtime header (dot products)
            return f"ts_{e.name}_{_vec(e.dtype)}({args})"
        if e.name == "sigmoid":
            return f"ts_sigmoid_{_suffix(e.dtype)}({args})"
        if e.name == "abs" and not dt.is_float(e.dtype):
            return f"ts_abs_{_suffix(e.dtype)}({args})"
        if e.name in _BIT_COUNTS:   # of the value's bits, as unsigned, widened to 64 bits
            bits = dt.info(e.dtype).bits
            return f"(({c_type(e.dtype)}){_BIT_COUNTS[e.name]}((uint64_t)(uint{bits}_t)({args}), {bits}))"
        if e.name == "fmod" and not dt.is_float(e.dtype):
            return _wrapped(e.dtype, f"(({c_type(e.dtype)})ts_fmod({args}))")
        single = dt.info(e.dtype).value_c_type == "float"
        return f"{_FLOAT_FN[e.name]}{'f' if single else ''}({args})"
