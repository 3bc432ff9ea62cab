"""Index comparisons of a vectorized loop made in int32 where every value fits."""
import numpy as np
import pytest

import tesched as ts
from tesched.arith.interval import VarRanges
from tesched.ir import nodes as ir
from tesched.te.expr import Binary, Cast, Const, Var
from tesched.te.visit import walk
from tesched.transform.narrow_indices import narrow_comparisons

pytestmark = pytest.mark.usefixtures("host_target")   # tests of the SIMD code and layouts this CPU gets


def _int64(op, a, b):
    return Binary(op, a, b, "int64")


def test_comparison_of_bounded_indices_is_made_in_int32():
    i, j = ir.LoopVar("i"), ir.LoopVar("j")
    cond = Binary("lt", _int64("sub", j, i), _int64("add", _int64("mul", Const(2, "int64"), i), Const(3, "int64")), "bool")
    narrowed = narrow_comparisons(cond, VarRanges().where(i, 0, 511).where(j, 0, 1030))
    assert narrowed.dtype == "bool" and narrowed.a.dtype == narrowed.b.dtype == "int32"
    casts = [n for n in walk(narrowed) if isinstance(n, Cast)]
    assert {id(c.value) for c in casts} == {id(i), id(j)} and all(c.dtype == "int32" for c in casts)
    assert not any(n.dtype == "int64" for n in walk(narrowed) if not isinstance(n, Var))


def test_comparison_that_may_leave_int32_is_kept():
    """``j * 4096`` reaches 2^32 for j near 2^20 (and an unbounded variable may be anything)."""
    i, j = ir.LoopVar("i"), ir.LoopVar("j")
    big = Binary("ge", _int64("mul", j, Const(4096, "int64")), i, "bool")
    ranges = VarRanges().where(i, 0, 10).where(j, 0, 2 ** 20)
    assert narrow_comparisons(big, ranges) is big
    unbounded = Binary("ge", j, i, "bool")
    assert narrow_comparisons(unbounded, VarRanges().where(i, 0, 10)) is unbounded


def test_padding_condition_vectorizes_with_32_bit_lanes(rand):
    """A data-dependent condition with the column in it: the column is an int32 ramp, as many lanes
    as the floats, and the result is NumPy's."""
    h, w = 5, 45
    A = ts.placeholder((h, w), name="A")
    C = ts.placeholder((h, w), name="C")
    P = ts.compute((h, w), lambda i, j: ts.if_then_else((j >= i) & (C[i, j] > 0.5), A[i, j], -1.0), name="P")
    s = ts.create_schedule(P.op)
    s[P].vectorize(P.op.axis[1])
    f = ts.build(s, [A, C, P], name="narrow_condition")
    assert "ts_vramp_i32x" in f.c_source and "ts_vramp_i64x" not in f.c_source and "omp simd" not in f.c_source
    a, c = rand((h, w)), rand((h, w))
    rows, cols = np.arange(h)[:, None], np.arange(w)[None, :]
    np.testing.assert_array_equal(f(a, c), np.where((cols >= rows) & (c > 0.5), a, -1))
