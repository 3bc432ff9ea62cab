"""Tests of tesched.te.update: declaring update definitions (ts.Func, ts.update), the loops each update
gets, and the declarations refused. Kernels against NumPy are in tests/poly/test_updates.py."""
import pytest

import tesched as ts
from tesched.te.update import UpdateOp
from update_helpers import histogram


def test_an_update_is_an_operation_of_its_own_over_its_reduce_axes():
    im, r, f = histogram(8, 20)
    op = f.tensor.op
    assert isinstance(op, UpdateOp) and op.name == "hist.update0" and op.position == 0
    assert op.base is f.op and f.op.name == "hist"
    assert [a.name for a in op.axis] == [] and [a.name for a in op.reduce_axis] == ["r"]
    assert op.input_tensors[0] is f.op.output(0)      # it runs after the pure definition
    assert any(t is im for t in op.input_tensors)     # and reads what its index reads


def test_an_updates_loops_are_its_pure_axes_then_its_reduce_axes_in_order_of_appearance():
    g = ts.placeholder((4, 6, 5), name="g")
    f = ts.Func((4, 6), name="f", axes=("a", "b"))
    a, b = f.axis
    f[a, b] = 0.0
    rk, rj = ts.reduce_axis((0, 5), "rk"), ts.reduce_axis((0, 6), "rj")
    f[a, rj] += g[a, rj, rk]
    op = f.tensor.op
    assert [v.name for v in op.axis] == ["a"] and [v.name for v in op.reduce_axis] == ["rj", "rk"]
    assert op.axis[0] is not a and op.reduce_axis[0] is not rj      # each update has loops of its own


def test_ts_update_is_the_same_definition_as_a_func_update():
    T = ts.compute((6,), lambda i: i * 1.0, name="T")
    r = ts.reduce_axis((1, 6), "r")
    T1 = ts.update(T, (r,), T[r] + T[r - 1])
    T2 = ts.update(T1, (0,), T1[0] * 2.0)
    assert T2.op.base is T.op and T2.op.previous is T1 and T2.op.position == 1
    assert T2.shape == T.shape and T2.dtype == "float32"


def test_values_are_cast_to_the_tensor_dtype():
    f = ts.Func((3,), "int16", name="f")
    x, = f.axis
    f[x] = 1
    f[x] += 2
    assert f.tensor.dtype == "int16" and f.tensor.op.body.value.dtype == "int16"


@pytest.mark.parametrize("index, message", [
    (lambda x, y, r: (y, r), r"update 0 of f: index 0 is y, which uses the pure axis y, but y is not alone at its "
                             r"own position \(index 1\)"),
    (lambda x, y, r: (x + 1, r), r"index 0 is x \+ 1, which uses the pure axis x, but x is not alone"),
    (lambda x, y, r: (r, r * 0 + x), r"index 1 is .*pure axis x, but x is not alone at its own position "
                                     r"\(index 0\)"),
])
def test_a_pure_axis_not_alone_at_its_position_is_refused(index, message):
    f = ts.Func((4, 4), name="f")
    x, y = f.axis
    f[x, y] = 0.0
    r = ts.reduce_axis((0, 4), "r")
    with pytest.raises(ValueError, match=message):
        f[index(x, y, r)] = 1.0


def test_a_pure_axis_alone_at_its_position_may_index_other_dimensions_too():
    """A histogram per row: hist(x, im(x, r)) += 1 (rows x are independent)."""
    im = ts.placeholder((3, 5), "int32", name="im")
    f = ts.Func((3, 8), "int32", name="hist")
    x, y = f.axis
    f[x, y] = 0
    r = ts.reduce_axis((0, 5), "r")
    f[x, im[x, r]] += 1
    assert [a.name for a in f.tensor.op.axis] == ["x"] and [a.name for a in f.tensor.op.reduce_axis] == ["r"]


def test_a_value_using_a_pure_axis_the_left_hand_side_lacks_is_refused():
    f = ts.Func((4, 4), name="f")
    x, y = f.axis
    f[x, y] = 0.0
    r = ts.reduce_axis((0, 4), "r")
    with pytest.raises(ValueError, match=r"update 0 of f: the value uses y, which is not a pure axis of the "
                                         r"left-hand side \(x\)"):
        f[x, r] = f[x, r] + y


def test_updating_an_older_version_than_the_latest_is_refused():
    """An update reading or following a later update: versions are updated in order only."""
    T = ts.compute((4,), lambda i: i * 1.0, name="T")
    r = ts.reduce_axis((0, 4), "r")
    T1 = ts.update(T, (r,), T[r] + 1.0)
    T2 = ts.update(T1, (r,), T1[r] * 2.0)
    with pytest.raises(ValueError, match=r"update of T: T.update0 is not its latest definition \(T.update1\)"):
        ts.update(T1, (r,), T2[r])
    with pytest.raises(ValueError, match=r"T is not its latest definition"):
        ts.update(T, (r,), 0.0)


def test_a_func_is_defined_purely_first_over_its_axes():
    f = ts.Func((4, 4), name="f")
    x, y = f.axis
    with pytest.raises(ValueError, match=r"Func f has no definition yet; define it first: f\[x, y\] = \.\.\."):
        f[x, y] += 1.0
    with pytest.raises(ValueError, match=r"Func f: its pure definition is f\[x, y\] = \.\.\. \(the axes f.axis"):
        f[y, x] = 1.0
    with pytest.raises(ValueError, match=r"Func f: 1 axis names for 2 dimensions"):
        ts.Func((4, 4), name="f", axes=("x",))


def test_only_a_plain_compute_can_be_updated():
    A = ts.placeholder((4, 4), name="A")
    k = ts.reduce_axis((0, 4), "k")
    S = ts.compute((4,), lambda i: ts.sum(A[i, k], axis=k), name="S")
    with pytest.raises(TypeError, match=r"update of S: only a single-output compute without a reduction"):
        ts.update(S, (0,), 1.0)
    with pytest.raises(TypeError, match=r"update of A: only a single-output compute"):
        ts.update(A, (0, 0), 1.0)
