"""Linear forms of index expressions: trip counts, strides, and folding of unrolled indices."""
from tesched.arith.linear import coefficient, constant_difference, constant_value, simplify
from tesched.te.expr import Binary, Const, Var


def i64(v):
    return Const(v, "int64")


def add(a, b):
    return Binary("add", a, b, "int64")


def mul(a, b):
    return Binary("mul", a, b, "int64")


def test_constant_trip_count():
    x = Var("x", "int64")
    assert constant_difference(add(mul(i64(8), x), i64(8)), mul(x, i64(8))) == 8
    assert constant_difference(add(x, i64(1)), i64(0)) is None


def test_coefficient_and_nonlinear_atoms():
    x, y = Var("x", "int64"), Var("y", "int64")
    e = add(mul(i64(58), x), add(y, i64(3)))
    assert coefficient(e, x) == 58 and coefficient(e, y) == 1
    assert coefficient(Binary("floordiv", x, i64(4), "int64"), x) is None


def test_unrolled_index_folds_to_a_constant():
    x = Var("x", "int64")
    e = Binary("sub", add(mul(i64(8), x), i64(3)), mul(i64(8), x), "int64")
    assert constant_value(simplify(e)) == 3


def test_atoms_are_keyed_by_variable_identity():
    a, b = Var("i", "int64"), Var("i", "int64")       # same name, different loops
    ma = Binary("min", a, i64(5), "int64")
    mb = Binary("min", b, i64(5), "int64")
    assert constant_difference(ma, mb) is None
    assert constant_difference(ma, Binary("min", a, i64(5), "int64")) == 0


def test_floor_division_and_modulo_of_a_fused_index_fold_back():
    p = Var("p", "int64")
    e = add(mul(Binary("floordiv", p, i64(28), "int64"), i64(28)), Binary("floormod", p, i64(28), "int64"))
    assert coefficient(e, p) == 1 and constant_value(simplify(Binary("sub", e, p, "int64"))) == 0
