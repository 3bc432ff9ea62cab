"""Tests of tesched.te.reduction: how a reduction starts (identity or ``init``) and combines values."""
import math

import pytest

import tesched as ts
from tesched.te.expr import Binary, Const
from tesched.te.reduction import MultiValue, Reduce


@pytest.mark.parametrize("combiner, dtype, identity", [
    ("sum", "float32", 0), ("prod", "int32", 1), ("max", "float32", -math.inf), ("min", "float32", math.inf),
    ("max", "int8", -128), ("min", "uint16", 65535),
])
def test_builtin_identities(combiner, dtype, identity):
    A = ts.placeholder((4,), dtype, name="A")
    k = ts.reduce_axis((0, 4), name="k")
    r = Reduce(combiner, A[k], [k], None)
    assert isinstance(r.identity(), Const) and r.identity().value == identity and r.identity().dtype == dtype
    assert [c.value for c in r.starts()] == [identity]


def test_init_replaces_the_identity_and_combine_uses_the_builtin_op():
    A = ts.placeholder((4,), name="A")
    k = ts.reduce_axis((0, 4), name="k")
    start = Const(2.0, "float32")
    r = Reduce("sum", A[k], [k], None, init=start)
    assert r.init is start and r.starts() == (start,)
    combined = r.combine(Const(1.0, "float32"), A[k])
    assert isinstance(combined, Binary) and combined.op == "add"


def test_components_of_a_tuple_reduction_and_rebuilding():
    A = ts.placeholder((4,), name="A")
    idx = ts.placeholder((4,), "int32", name="idx")
    k = ts.reduce_axis((0, 4), name="k")
    argmax = ts.comm_reducer(lambda x, y: (ts.select(x[1] >= y[1], x[0], y[0]), ts.maximum(x[1], y[1])),
                             lambda t0, t1: (ts.const(-1, t0), ts.min_value(t1)), name="argmax")
    T0, T1 = ts.compute((1,), lambda i: argmax((idx[k], A[k]), axis=k), name="T")
    first = T0.op.body
    assert T1.op is T0.op and isinstance(first, Reduce) and len(first.sources) == 2
    assert first.value_index == 0 and first.dtype == "int32" and first.component(1).dtype == "float32"
    rebuilt = first.with_children(first.children())
    assert rebuilt.sources == first.sources and rebuilt.value_index == 0


def test_a_compute_of_several_values_has_a_multivalue_body():
    A = ts.placeholder((4,), name="A")
    P, Q = ts.compute((4,), lambda i: (A[i] + 1.0, A[i] * 2.0), name="PQ")
    body = P.op.body
    assert isinstance(body, MultiValue) and len(body.children()) == 2 and body.dtype == "float32"
    assert body.with_children(body.children()).values == body.values
