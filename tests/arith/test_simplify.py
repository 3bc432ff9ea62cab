"""The range-aware simplifier: random affine/div/mod/min/max/select expressions over random small ranges
evaluate to the same value at every point of the ranges after simplification, and never grow."""
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from tesched.arith.interval import VarRanges, bound
from tesched.arith.simplify import simplify
from tesched.te.visit import tree_size as size
from tesched.te.expr import Binary, Const, Expr, Select, Unary, Var

X, Y, Z = Var("x", "int64"), Var("y", "int64"), Var("z", "int64")
VARS = (X, Y, Z)


def c(v: int) -> Const:
    return Const(v, "int64")


def binary(op: str, a: Expr, b: Expr) -> Expr:
    return Binary(op, a, b, "bool" if op in ("lt", "le", "gt", "ge", "eq", "ne") else "int64")


def evaluate(e: Expr, env: dict) -> int:
    """The value of ``e`` with Python's (floor) semantics for ``//`` and ``%``, C's for cdiv/cmod."""
    if isinstance(e, Const):
        return int(e.value)
    if isinstance(e, Var):
        return env[id(e)]
    if isinstance(e, Select):
        return evaluate(e.true_value if evaluate(e.cond, env) else e.false_value, env)
    if isinstance(e, Unary):
        a = evaluate(e.a, env)
        return -a if e.op == "neg" else int(not a)
    a, b = evaluate(e.a, env), evaluate(e.b, env)
    if e.op == "cdiv":
        return abs(a) // abs(b) * (1 if (a >= 0) == (b > 0) else -1)
    if e.op == "cmod":
        return a - b * (abs(a) // abs(b) * (1 if (a >= 0) == (b > 0) else -1))
    return {"add": a + b, "sub": a - b, "mul": a * b, "min": min(a, b), "max": max(a, b),
            "floordiv": a // b if b else 0, "floormod": a % b if b else 0, "lt": int(a < b),
            "le": int(a <= b), "gt": int(a > b), "ge": int(a >= b), "eq": int(a == b), "ne": int(a != b), "and": int(bool(a) and bool(b)),
            "or": int(bool(a) or bool(b))}[e.op]


def ints(draw_leaf):
    """Integer expressions: affine combinations, division/modulo by positive constants, min, max, selects."""
    def extend(children):
        k = st.integers(-9, 9).map(c)
        divisor = st.integers(1, 9).map(c)
        return st.one_of(
            st.tuples(st.sampled_from(["add", "sub", "min", "max"]), children, children).map(
                lambda t: binary(*t)),
            st.tuples(children, k).map(lambda t: binary("mul", t[1], t[0])),
            st.tuples(st.sampled_from(["floordiv", "floormod"]), children, divisor).map(lambda t: binary(*t)),
            st.tuples(st.sampled_from(["cdiv", "cmod"]), children, divisor).map(lambda t: binary(*t)),
            st.tuples(st.sampled_from(["lt", "le", "gt", "ge", "eq", "ne"]), children, children, children, children).map(
                lambda t: Select(binary(t[0], t[1], t[2]), t[3], t[4])),
            children.map(lambda a: Unary("neg", a)),
        )
    return st.recursive(draw_leaf, extend, max_leaves=12)


LEAVES = st.one_of(st.sampled_from(VARS), st.integers(-20, 20).map(c))


@st.composite
def ranges(draw):
    out = VarRanges()
    for v in VARS:
        low = draw(st.integers(-12, 12))
        out = out.where(v, low, low + draw(st.integers(0, 9)))
    return out


def points(r: VarRanges):
    axes = [range(int(low), int(high) + 1) for _, (low, high) in r]
    for values in itertools.product(*axes):
        yield {id(v): x for (v, _), x in zip(r, values)}


@settings(max_examples=400, deadline=None)
@given(ints(LEAVES), ranges())
def test_simplified_equals_original_on_every_point(e, r):
    s = simplify(e, r)
    assert size(s) <= size(e)
    low, high = bound(e, r)
    for env in points(r):
        value = evaluate(e, env)
        assert evaluate(s, env) == value, (e, s, env)
        assert low <= value <= high, (e, env, (low, high))


@settings(max_examples=150, deadline=None)
@given(ints(LEAVES))
def test_without_ranges_only_identities(e):
    s = simplify(e)
    assert size(s) <= size(e)
    box = VarRanges().where(X, -5, 5).where(Y, -3, 4).where(Z, 0, 3)
    for env in points(box):
        assert evaluate(s, env) == evaluate(e, env), (e, s, env)


def loop(v, low, high):
    return VarRanges().where(v, low, high)


def test_packed_layout_index_loses_div_and_mod():
    r = loop(X, 0, 31).where(Y, 0, 7)
    n = binary("add", binary("mul", c(8), Y), X)          # n = 8*n.outer + n.inner ... with n.inner < 32
    inner = binary("add", binary("mul", c(32), Y), X)
    assert simplify(binary("floordiv", inner, c(32)), r) is Y
    assert simplify(binary("floormod", inner, c(32)), r) is X
    assert str(simplify(binary("floordiv", n, c(8)), r.where(X, 0, 7))) == "y"
    # the offset of a packed panel: (n // 32) * 32768 + k * 32 + n % 32 with n = 32*y + x
    flat = binary("add", binary("mul", binary("floordiv", inner, c(32)), c(32768)),
                  binary("add", binary("mul", Z, c(32)), binary("floormod", inner, c(32))))
    assert str(simplify(flat, r)) == "32768 * y + 32 * z + x"


def test_cancelled_terms_and_fused_index():
    zero = binary("mul", binary("sub", X, X), c(784))
    assert str(simplify(binary("add", zero, Y))) == "y"
    fused = binary("add", binary("mul", binary("floordiv", X, c(28)), c(28)), binary("floormod", X, c(28)))
    assert simplify(fused) is X


def test_min_max_select_decided_by_ranges():
    r = loop(X, 0, 7).where(Y, 8, 20)
    assert simplify(binary("min", X, Y), r) is X
    assert simplify(binary("max", X, Y), r) is Y
    assert simplify(binary("min", X, binary("add", X, c(3)))) is X
    cond = binary("lt", X, c(8))
    assert simplify(Select(cond, Y, Z), r) is Y
    assert simplify(binary("min", X, Y), loop(X, 0, 9).where(Y, 8, 20)) is not X   # not decided


def test_common_factor_and_nested_division():
    r = loop(X, 0, 100)
    assert str(simplify(binary("floordiv", binary("mul", c(4), X), c(8)), r)) == "x // 2"
    assert str(simplify(binary("floordiv", binary("floordiv", X, c(4)), c(2)), r)) == "x // 8"
    assert str(simplify(binary("floormod", binary("floormod", X, c(16)), c(4)), r)) == "x % 4"
    assert simplify(binary("cdiv", X, c(4)), r).op == "floordiv"   # non-negative: C's / is the floor
    assert simplify(binary("cdiv", X, c(4)), loop(X, -3, 3)).op == "cdiv"


def test_a_select_equal_on_both_sides_of_its_condition_is_what_both_sides_are():
    """isl writes a region's origin along a fused loop's inner axis piecewise (``f % 3`` for ``0 <= f < 6``
    as ``select(f >= 3, f - 3, f)``); an access's offset from it, ``f % 3`` minus the origin, is 0."""
    r = loop(X, 0, 5)
    origin = Select(binary("ge", X, c(3)), binary("sub", X, c(3)), X)
    assert str(simplify(binary("sub", binary("floormod", X, c(3)), origin), r)) == "0"
    offset = binary("add", binary("mul", c(8), binary("sub", binary("floormod", X, c(3)), origin)), Y)
    assert simplify(offset, r) is Y
    assert str(simplify(origin, r)) == "select(x >= 3, x - 3, x)"       # the sides differ: kept
    assert str(simplify(binary("sub", binary("floormod", X, c(3)), origin), loop(X, 0, 8))) != "0"   # not equal there
