"""Tests of tesched.poly.intervals: bounds of random index expressions hold for every point of every tile
(checked by enumeration), are exact for indices in which each variable appears once, follow float
arithmetic and casts, and bound reads by their type."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tesched as ts
from tesched.poly import intervals as iv
from tesched.te.expr import Var


def _expr(draw, depth, x, y, once):
    """A random integer index over ``x`` and ``y`` (each at most once when ``once``) and its evaluator."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        choice = draw(st.sampled_from(["x", "y", "c"] if once is None else ["leaf", "c"]))
        if choice == "leaf":
            choice = once.pop() if once else "c"
        if choice == "c":
            c = draw(st.integers(-5, 5))
            return ts.const(c, "int32"), lambda a, b: np.full_like(a, c)
        return (x, lambda a, b: a) if choice == "x" else (y, lambda a, b: b)
    op = draw(st.sampled_from(["add", "sub", "mulc", "div", "mod", "min", "max"]))
    a, fa = _expr(draw, depth - 1, x, y, once)
    if op in ("mulc", "div", "mod"):
        c = draw(st.integers(1, 4)) * (draw(st.sampled_from([1, -1])) if op == "mulc" else 1)
        return {"mulc": (a * c, lambda p, q: fa(p, q) * c), "div": (a // c, lambda p, q: fa(p, q) // c),
                "mod": (a % c, lambda p, q: fa(p, q) % c)}[op]
    if once is not None:
        b, fb = ts.const(draw(st.integers(-5, 5)), "int32"), None
        fb = (lambda v: (lambda p, q: np.full_like(p, v)))(int(b.value))
    else:
        b, fb = _expr(draw, depth - 1, x, y, once)
    return {"add": (a + b, lambda p, q: fa(p, q) + fb(p, q)), "sub": (a - b, lambda p, q: fa(p, q) - fb(p, q)),
            "min": (ts.min(a, b), lambda p, q: np.minimum(fa(p, q), fb(p, q))),
            "max": (ts.max(a, b), lambda p, q: np.maximum(fa(p, q), fb(p, q)))}[op]


@st.composite
def index_and_tiles(draw, once=False):
    x, y = Var("x"), Var("y")
    e, f = _expr(draw, 3, x, y, ["x"] if once else None)
    return x, y, e, f, draw(st.integers(1, 7)), draw(st.integers(1, 7))


def _check(x, y, e, f, sx, sy, exact):
    ext_x, ext_y = 13, 9
    leaves = {id(x): iv.tiles(0, 2, -3, ext_x, sx), id(y): iv.tiles(1, 2, 0, ext_y, sy)}
    lo, hi = iv.span(e, leaves)
    lo, hi = np.broadcast_to(lo, (len(range(0, ext_x, sx)), len(range(0, ext_y, sy)))), np.broadcast_to(
        hi, (len(range(0, ext_x, sx)), len(range(0, ext_y, sy))))
    for tx, x0 in enumerate(range(-3, ext_x - 3, sx)):
        for ty, y0 in enumerate(range(0, ext_y, sy)):
            a, b = np.meshgrid(np.arange(x0, min(x0 + sx, ext_x - 3)), np.arange(y0, min(y0 + sy, ext_y)),
                               indexing="ij")
            values = f(a, b)
            assert lo[tx, ty] <= values.min() and values.max() <= hi[tx, ty], (repr(e), tx, ty)
            if exact:
                assert (lo[tx, ty], hi[tx, ty]) == (values.min(), values.max()), (repr(e), tx, ty)


@settings(max_examples=80, deadline=None)
@given(index_and_tiles())
def test_bounds_hold_on_every_tile(case):
    _check(*case, exact=False)


@settings(max_examples=60, deadline=None)
@given(index_and_tiles(once=True))
def test_bounds_are_exact_when_the_variable_appears_once(case):
    x, y, e, f, sx, sy = case
    _check(x, y, e, f, sx, sy, exact=not any(t in repr(e) for t in ("%",)))


def test_float_arithmetic_and_casts_bound_a_lookup_index():
    V = ts.placeholder((4,), name="V")
    i = Var("i")
    index = ts.cast("int32", ts.clamp(V[i], 0.0, 1.0) * 10.0 + 0.5)
    assert [float(v) for v in iv.span(index, {})] == [0.0, 10.0]
    assert [float(v) for v in iv.span(ts.cast("int32", V[i] * 2.0), {})] == [-2.0 ** 31, 2.0 ** 31 - 1]
    level = ts.cast("int32", ts.floor(ts.clamp(V[i] * 3.0, 0.0, 2.5)))
    assert [float(v) for v in iv.span(level, {})] == [0.0, 2.0]
    u8 = ts.placeholder((4,), dtype="uint8", name="u8")
    assert [float(v) for v in iv.span(u8[i] // 16, {})] == [0.0, 15.0]


def test_large_grids_are_relaxed_to_their_hull():
    x, y = Var("x"), Var("y")
    n = int(np.sqrt(iv.MAX_GRID)) * 2
    leaves = {id(x): iv.tiles(0, 2, 0, n, 1), id(y): iv.tiles(1, 2, 0, n, 1)}
    lo, hi = iv.span(x + y, leaves)
    assert lo.size == 1 and float(lo) == 0 and float(hi) == 2 * n - 2
    lo, hi = iv.span(x * 2, leaves)
    assert lo.shape == (n, 1) and float(hi[-1, 0]) == 2 * n - 2
