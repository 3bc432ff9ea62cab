"""Tests of tesched.poly.index_checks: data-dependent indices (gathers, lookup tables) at every schedule
level, against NumPy; what cannot be proven inside its tensor is checked when the kernel runs and raises
BoundsError naming the read; what interval arithmetic bounds is not checked."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tesched as ts
from tesched.poly.index_checks import index_range


def _gather(n=16, m=24):
    A = ts.placeholder((m, 3), name="A")
    I = ts.placeholder((n,), "int32", name="I")
    P = ts.compute((m, 3), lambda i, j: A[i, j] * 2.0 + 1.0, name="P")
    G = ts.compute((n, 3), lambda i, j: P[I[i], j] - A[I[i], 2 - j], name="G")
    return A, I, P, G


def _reference(a, idx):
    return (a * 2 + 1)[idx] - a[idx][:, ::-1]


@pytest.mark.parametrize("level", ["root", "inline", "at_i", "at_j", "parallel", "vectorized"])
def test_a_gather_at_every_schedule_level_computes_what_numpy_does(rand, level):
    A, I, P, G = _gather()
    s = ts.create_schedule(G.op)
    i, j = G.op.axis
    if level == "inline":
        s[P].compute_inline()
    elif level in ("at_i", "at_j"):
        s[P].compute_at(s[G], i if level == "at_i" else j)
    elif level == "parallel":
        s[G].parallel(i)
    elif level == "vectorized":
        s[G].vectorize(i)
    f = ts.build(s, [A, I, G], name=f"gather_{level}")
    a, idx = rand((24, 3)), rand((16,), "int32", 0, 23)
    np.testing.assert_allclose(f(a, idx), _reference(a, idx), rtol=1e-6)
    idx[5] = 24
    with pytest.raises(ts.BoundsError, match=r"stage G: P\[I\[i\], j\] reads dimension 0 at a data-dependent index "
                                             r"outside \[0, 24\); P has shape \(24, 3\)|stage G: A\[I\[i\], 2 - j\]"):
        f(a, idx)
    idx[5] = -1
    with pytest.raises(ts.BoundsError):
        f.prepare(a, idx, np.empty((16, 3), "float32"))()


def test_the_lowered_ir_shows_the_checked_index():
    A, I, P, G = _gather()
    s = ts.create_schedule(G.op)
    text = str(ts.lower(s, [A, I, G]))
    assert "P[checked(I[i#2], 24), j#2]" in text


def test_a_clamped_lookup_table_needs_no_check(rand):
    """Halide's local Laplacian reads its remapping table at clamp(cast(x * 255), 0, 255)."""
    X = ts.placeholder((8, 9), name="X")
    L = ts.placeholder((256,), name="L")
    Y = ts.compute((8, 9), lambda y, x: L[ts.clamp((X[y, x] * 255.0).astype("int32"), 0, 255)], name="Y")
    s = ts.create_schedule(Y.op)
    assert "checked" not in str(ts.lower(s, [X, L, Y]))
    f = ts.build(s, [X, L, Y], name="lut_clamped")
    x, lut = rand((8, 9), low=-0.5, high=1.5), rand((256,))
    np.testing.assert_allclose(f(x, lut), lut[np.clip((x * 255).astype(np.int32), 0, 255)])


def test_a_uint8_index_into_256_entries_needs_no_check_and_into_200_does(rand):
    img = ts.placeholder((6, 7), "uint8", name="img")
    for size, checked in ((256, False), (200, True)):
        L = ts.placeholder((size,), name="L")
        Y = ts.compute((6, 7), lambda y, x: L[img[y, x]], name="Y")
        assert ("checked" in str(ts.lower(ts.create_schedule(Y.op), [img, L, Y]))) is checked


def test_a_symbolic_extent_is_checked_against_the_size_of_the_call(rand):
    n = ts.var("n")
    A = ts.placeholder((n,), name="A")
    I = ts.placeholder((5,), "int64", name="I")
    G = ts.compute((5,), lambda i: A[I[i]] + A[n - 1], name="G")
    f = ts.build(ts.create_schedule(G.op), [A, I, G], name="gather_symbolic")
    a, idx = rand((9,)), np.array([0, 8, 3, 3, 1], np.int64)
    np.testing.assert_allclose(f(a, idx), a[idx] + a[8])
    with pytest.raises(ts.BoundsError, match=r"outside \[0, n\)"):
        f(a[:8].copy(), idx)


def test_an_affine_dimension_of_a_gather_is_still_proven_statically():
    A = ts.placeholder((10, 4), name="A")
    I = ts.placeholder((6,), "int32", name="I")
    G = ts.compute((6, 4), lambda i, j: A[I[i], j + 1], name="G")
    with pytest.raises(ts.BoundsError, match=r"A\[I\[i\], j \+ 1\] at i = \d, j = 3 reads dimension 1 at 4"):
        ts.lower(ts.create_schedule(G.op), [A, I, G])


def test_an_affine_read_kept_inside_only_by_a_data_dependent_condition_is_checked_at_run_time(rand):
    A = ts.placeholder((8,), name="A")
    M = ts.placeholder((8,), "int32", name="M")
    G = ts.compute((8,), lambda i: ts.if_then_else(M[i] > 0, A[i + 1], 0.0), name="G")
    f = ts.build(ts.create_schedule(G.op), [A, M, G], name="guarded_gather")
    a, mask = rand((8,)), np.array([1, 0, 1, 1, 0, 0, 1, 0], np.int32)
    np.testing.assert_allclose(f(a, mask), np.where(mask > 0, np.append(a[1:], 0), 0))
    mask[7] = 1
    with pytest.raises(ts.BoundsError, match=r"A\[i \+ 1\]"):
        f(a, mask)


def test_nested_gathers_check_both_levels(rand):
    A = ts.placeholder((10,), name="A")
    I = ts.placeholder((6,), "int32", name="I")
    J = ts.placeholder((4,), "int32", name="J")
    G = ts.compute((4,), lambda i: A[I[J[i]]], name="G")
    f = ts.build(ts.create_schedule(G.op), [A, I, J, G], name="nested_gather")
    a, ii, jj = rand((10,)), rand((6,), "int32", 0, 9), rand((4,), "int32", 0, 5)
    np.testing.assert_allclose(f(a, ii, jj), a[ii[jj]])
    jj[0] = 6
    with pytest.raises(ts.BoundsError, match=r"I\[J\[i\]\]"):
        f(a, ii, jj)


@pytest.mark.parametrize("expr, expected", [
    (lambda x, i: ts.minimum(ts.maximum(x, 0), 255), (0, 255)),
    (lambda x, i: x % 16, (0, 15)),
    (lambda x, i: i * 2 + 1, (1, 9)),
    (lambda x, i: x, (-2**31, 2**31 - 1)),
    (lambda x, i: x * i, None),
    (lambda x, i: x.astype("uint8"), (0, 255)),
    (lambda x, i: (x % 16) // 4 - i, (-4, 3)),
])
def test_index_range(expr, expected):
    X = ts.placeholder((5,), "int32", name="X")
    i = ts.compute((5,), lambda i: i, name="c").op.axis[0]
    assert index_range(expr(X[i], i)) == expected


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 40), m=st.integers(1, 12), seed=st.integers(0, 2**31), split=st.sampled_from([0, 2, 3, 8]),
       level=st.sampled_from(["root", "inline", "at"]), bad=st.booleans())
def test_random_gathers_and_schedules_match_numpy_or_raise(n, m, seed, split, level, bad):
    rng = np.random.default_rng(seed)
    A = ts.placeholder((m,), name="A")
    I = ts.placeholder((n,), "int32", name="I")
    P = ts.compute((m,), lambda i: A[i] * A[i], name="P")
    G = ts.compute((n,), lambda i: P[I[i]] + 1.0, name="G")
    s = ts.create_schedule(G.op)
    loop = G.op.axis[0]
    if split:
        loop, _ = s[G].split(loop, factor=split)
    if level == "inline":
        s[P].compute_inline()
    elif level == "at":
        s[P].compute_at(s[G], loop)
    f = ts.build(s, [A, I, G], name="random_gather")
    a = rng.uniform(size=m).astype("float32")
    idx = rng.integers(0, m, size=n).astype("int32")
    if bad:
        idx[rng.integers(0, n)] = rng.choice([-1, m, m + 7, -(2**31)])
        with pytest.raises(ts.BoundsError):
            f(a, idx)
    else:
        np.testing.assert_allclose(f(a, idx), a[idx] ** 2 + 1, rtol=1e-6)


@pytest.mark.parametrize("low, checked", [(1, False), (0, True)])
def test_the_affine_part_of_a_data_dependent_condition_proves_what_it_can(rand, low, checked):
    """(i >= 1) & (C[i] > 0.5) implies i >= 1, which keeps A[i - 1] inside; i >= 0 does not."""
    A = ts.placeholder((8,), name="A")
    C = ts.placeholder((9,), name="C")
    B = ts.compute((9,), lambda i: ts.if_then_else((i >= low) & (C[i] > 0.5), A[i - 1], -1.0), name="B")
    s = ts.create_schedule(B.op)
    assert ("checked" in str(ts.lower(s, [A, C, B]))) is checked
    f = ts.build(s, [A, C, B], name=f"implied_{low}")
    a, c = rand((8,)), rand((9,))
    c[0] = 0.0
    np.testing.assert_array_equal(f(a, c), np.where((np.arange(9) >= 1) & (c > 0.5), np.append(0, a), -1))
    if checked:
        c[0] = 1.0
        with pytest.raises(ts.BoundsError, match=r"A\[i - 1\]"):
            f(a, c)


def test_a_float_clamped_scaled_and_converted_index_is_proved_and_nan_safe():
    V = ts.placeholder((6, 16), name="V")
    T = ts.placeholder((11,), name="T")
    out = ts.compute((6, 16), lambda y, x: T[ts.cast("int32", ts.clamp(V[y, x], 0.0, 1.0) * 10.0 + 0.5)], name="out")
    unclamped = ts.compute((6, 16), lambda y, x: T[ts.cast("int32", V[y, x] * 10.0)], name="unclamped")
    s = ts.create_schedule(out.op)
    s[out].vectorize(out.op.axis[1])
    text = str(ts.lower(s, [V, T, out]))
    assert "checked(" not in text and "min(max(int32(" in text     # proved; clamped only against NaN
    assert "checked(" in str(ts.lower(ts.create_schedule(unclamped.op), [V, T, unclamped]))
    f = ts.build(s, [V, T, out])
    v = np.random.default_rng(1).uniform(-0.5, 1.5, (6, 16)).astype(np.float32)
    v[0, :4] = [np.nan, np.inf, -np.inf, 0.5]
    table = np.arange(11, dtype=np.float32) * 3.0
    got = f(v, table)
    index = (np.clip(np.nan_to_num(v, nan=0.0), 0, 1) * np.float32(10) + np.float32(0.5)).astype(np.int32)
    np.testing.assert_array_equal(got[:, 4:], table[index][:, 4:])
    assert got[0, 1] == table[10] and got[0, 2] == table[0] and got[0, 3] == table[5]
    assert got[0, 0] in (table[0], table[10])                         # NaN: an edge, never outside
    g = ts.build(ts.create_schedule(unclamped.op), [V, T, unclamped])
    with pytest.raises(ts.BoundsError, match="T is accessed out of bounds by stage unclamped"):
        g(v, table)


def test_an_index_computed_in_a_stage_of_its_own_is_bounded_by_that_stage_body(rand):
    """A bin index computed once in a stage of its own (stored, as a histogram's reader needs it): its
    values are the stage's body over its axes, so a clamped float-derived bin needs no check (and is
    clamped against NaN where read); an unclamped one, or one a reduction computed, is still checked."""
    X = ts.placeholder((6, 10), name="X")
    L = ts.placeholder((16,), name="L")
    cases = {"clamped": lambda y, x: ts.cast("int32", ts.clamp(X[y, x], 0.0, 1.0) * 15.0 + 0.5),
             "unclamped": lambda y, x: ts.cast("int32", X[y, x] * 15.0 + 0.5)}
    texts = {}
    for name, body in cases.items():
        B = ts.compute((6, 10), body, name="B")
        Y = ts.compute((6, 10), lambda y, x: L[B[y, x]] * 2.0, name="Y")
        s = ts.create_schedule(Y.op)
        texts[name] = str(ts.lower(s, [X, L, Y]))
    assert "checked" not in texts["clamped"] and "L[min(max(B[y#2, x#2], 0), 15)]" in texts["clamped"]
    assert "L[checked(B[y#2, x#2], 16)]" in texts["unclamped"]
    k = ts.reduce_axis((0, 10), name="k")
    S = ts.compute((6,), lambda y: ts.sum(ts.cast("int32", ts.clamp(X[y, k], 0.0, 1.0)), axis=k), name="S")
    Z = ts.compute((6,), lambda y: L[S[y]], name="Z")
    assert "checked(S[" in str(ts.lower(ts.create_schedule(Z.op), [X, L, Z]))
    B = ts.compute((6, 10), cases["clamped"], name="B")
    Y = ts.compute((6, 10), lambda y, x: L[B[y, x]] * 2.0, name="Y")
    f = ts.build(ts.create_schedule(Y.op), [X, L, Y], name="bin_stage_lut")
    x, lut = rand((6, 10), low=-0.5, high=1.5), rand((16,))
    x[2, 3] = np.nan
    got = f(x, lut)
    finite = ~np.isnan(x)
    want = lut[(np.clip(np.nan_to_num(x), 0, 1) * np.float32(15) + np.float32(0.5)).astype(np.int32)] * 2
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-6)
    assert np.isin(got[2, 3], lut * 2)           # a NaN pixel reads an entry of the table, not memory outside
