"""Tests of tesched.poly.bounds: every read is proven inside its tensor at lowering time, or BoundsError
names the tensor, the stage, the index expression and one offending iteration. Guarded reads (padding
with if_then_else, where=, & and |) are judged only where they run; boundary conditions always pass."""
import numpy as np
import pytest

import tesched as ts


@pytest.mark.parametrize("offset, message", [
    (5, r"A is accessed out of bounds by stage B: A\[i \+ 5\] at i = \d+ reads dimension 0 at 1\d, which is "
        r"beyond the max \(9\)"),
    (-3, r"A\[i \+ -3\] at i = [0-2] reads dimension 0 at -[1-3], which is below the min \(0\)"),
    (1 << 20, r"A\[i \+ 1048576\] .* beyond the max \(9\)"),
])
def test_reads_outside_a_tensor_raise_bounds_error(offset, message):
    A = ts.placeholder((10,), name="A")
    B = ts.compute((10,), lambda i: A[i + offset], name="B")
    with pytest.raises(ts.BoundsError, match=message):
        ts.lower(ts.create_schedule(B.op), [A, B])


def test_symbolic_sizes_name_the_sizes_of_the_offending_iteration():
    n = ts.var("n")
    X = ts.placeholder((n, 4), name="X")
    Y = ts.compute((n, 4), lambda i, j: X[i, j + 1], name="Y")
    with pytest.raises(ts.BoundsError, match=r"X\[i, j \+ 1\] at i = \d+, j = 3 \(with n = \d+\) reads dimension 1 "
                                             r"at 4, which is beyond the max \(3\); X has shape \(\d+, 4\)"):
        ts.build(ts.create_schedule(Y.op), [X, Y], name="oob_symbolic")


def test_reduction_reads_are_checked_over_the_reduce_domain():
    A = ts.placeholder((8,), name="A")
    k = ts.reduce_axis((0, 5), name="k")
    B = ts.compute((5,), lambda i: ts.sum(A[i + k], axis=k), name="B")
    with pytest.raises(ts.BoundsError, match=r"stage B: A\[i \+ k\] at i = \d, k = \d"):
        ts.lower(ts.create_schedule(B.op), [A, B])


def test_a_read_through_an_inlined_stage_is_blamed_on_its_reader():
    A = ts.placeholder((6,), name="A")
    P = ts.compute((6,), lambda i: A[i] * 2.0, name="P")
    C = ts.compute((6,), lambda i: P[i + 1], name="C")
    s = ts.create_schedule(C.op)
    with pytest.raises(ts.BoundsError, match=r"P is accessed out of bounds by stage C"):
        ts.lower(s, [A, C])
    s[P].compute_inline()
    with pytest.raises(ts.BoundsError, match=r"A is accessed out of bounds by stage C: A\[i \+ 1\]"):
        ts.lower(s, [A, C])


def _guarded(kind: str):
    n = 6
    A = ts.placeholder((n,), name="A")
    k = ts.reduce_axis((0, 3), name="k")
    bodies = {
        "if_then_else": lambda i: ts.if_then_else(i >= 1, A[i - 1], 0.0) + ts.if_then_else(i < n - 1, 0.0, A[i]),
        "not": lambda i: ts.if_then_else(~(i < 1), A[i - 1], 0.0),
        "and": lambda i: ts.if_then_else((i >= 1) & (A[i - 1] > 0.5), 1.0, 0.0),
        "or": lambda i: ts.if_then_else((i < 1) | (A[i - 1] > 0.5), 1.0, 0.0),
        "where": lambda i: ts.sum(A[i + k - 1], axis=k, where=(i + k >= 1) & (i + k <= n)),
        "ne": lambda i: ts.if_then_else(i != 0, A[i - 1], 0.0),
    }
    refs = {
        "if_then_else": lambda a: np.r_[0, a[:-1]] + np.r_[np.zeros(n - 1), a[-1]],
        "not": lambda a: np.r_[0, a[:-1]],
        "and": lambda a: np.r_[0, (a[:-1] > 0.5)].astype(float),
        "or": lambda a: np.r_[1, (a[:-1] > 0.5)].astype(float),
        "where": lambda a: np.convolve(np.r_[0, a, 0], np.ones(3), "valid")[:n],
        "ne": lambda a: np.r_[0, a[:-1]],
    }
    return A, ts.compute((n,), bodies[kind], name="G"), refs[kind]


@pytest.mark.parametrize("kind", ["if_then_else", "not", "and", "or", "where", "ne"])
def test_guarded_reads_are_judged_where_they_run(kind, rand):
    A, G, reference = _guarded(kind)
    f = ts.build(ts.create_schedule(G.op), [A, G], name=f"guarded_{kind}")
    a = rand(6)
    np.testing.assert_allclose(f(a), reference(a), rtol=1e-6)


def test_a_guard_too_weak_is_still_caught():
    A = ts.placeholder((6,), name="A")
    G = ts.compute((6,), lambda i: ts.if_then_else(i >= 0, A[i - 1], 0.0), name="G")
    with pytest.raises(ts.BoundsError, match=r"A\[i - 1\] at i = 0"):
        ts.lower(ts.create_schedule(G.op), [A, G])


def test_data_dependent_indices_are_not_judged(rand):
    A = ts.placeholder((6,), name="A")
    I = ts.placeholder((6,), "int32", name="I")
    G = ts.compute((6,), lambda i: A[I[i]], name="G")
    f = ts.build(ts.create_schedule(G.op), [A, I, G], name="gather")
    a, idx = rand(6), np.array([5, 0, 1, 1, 2, 4], np.int32)
    np.testing.assert_allclose(f(a, idx), a[idx])


def test_clamped_resampled_reads_are_proven_without_isl_and_wrong_ones_still_raise(monkeypatch):
    """Pyramid reads (``min(max(y // 2 - 1 + 2 * (y % 2), 0), n - 1)``) are proven by interval arithmetic
    over the stage's axes, with no isl problem to solve; an index off by one still raises, through isl."""
    from tesched.poly import bounds
    calls = []
    real = bounds._check_read
    monkeypatch.setattr(bounds, "_check_read", lambda *a: calls.append(a[2]) or real(*a))
    A = ts.placeholder((5, 6), name="A")
    B = ts.compute((10, 6), lambda y, x: A[ts.clamp(y // 2 - 1 + 2 * (y % 2), 0, 4), x] + A[ts.minimum(y // 2, 4), x],
                   name="B")
    C = ts.compute((10, 6), lambda y, x: B[y, x] * 2.0, name="C")
    s = ts.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    f = ts.build(s, [A, C], name="bounds_resampled")
    a = np.arange(30, dtype=np.float32).reshape(5, 6)
    y = np.arange(10)
    want = 2 * (a[np.clip(y // 2 - 1 + 2 * (y % 2), 0, 4)] + a[np.minimum(y // 2, 4)])
    np.testing.assert_allclose(f(a), want)
    assert calls == []
    D = ts.compute((10, 6), lambda y, x: A[ts.minimum(y // 2 + 1, 5), x], name="D")
    with pytest.raises(ts.BoundsError, match=r"A\[min\(y // 2 \+ 1, 5\), x\] at y = [89], x = \d reads dimension 0 "
                                             r"at 5, which is beyond the max \(4\)"):
        ts.lower(ts.create_schedule(D.op), [A, D])
    assert calls
