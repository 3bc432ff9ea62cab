"""``Stage.prefetch`` (tesched.poly.prefetch): the region a later iteration reads, prefetched per cache
line at the start of each iteration, never past the loop's end; results checked against NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import tesched as ts

from .helpers import check_transposed_pair, transposed_pair_kernel


def _matmul(n: int | ts.Var, m: int | ts.Var):
    A = ts.placeholder((n, m), name="A")
    B = ts.placeholder((m, n), name="B")
    k = ts.reduce_axis((0, m), name="k")
    C = ts.compute((n, n), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def test_prefetch_of_the_next_rows_at_two_loops(rand):
    A, B, C = _matmul(24, 40)
    s = ts.create_schedule(C.op)
    i, j = C.op.axis
    k = C.op.reduce_axis[0]
    s[C].reorder(i, k, j)
    s[C].prefetch(B, k, 2)
    s[C].prefetch(A, i, 1)
    kernel = ts.build(s, [A, B, C], name="prefetch_rows")
    text = str(kernel.lowered)
    # B's row k + 2, every 16 floats (a 64-byte line), while k + 2 is a row of B; A's row i + 1
    assert "if (k <= 37)" in text and "for B.ahead1 in [0, 24) step 16" in text, text
    assert "if (i <= 22)" in text and "for A.ahead0 in [i + 1, i + 2)" in text, text
    assert kernel.c_source.count("__builtin_prefetch(") == 2
    a, b = rand((24, 40)), rand((40, 24))
    np.testing.assert_allclose(kernel(a, b), a.astype(np.float64) @ b, rtol=1e-4)


def test_prefetch_of_a_tile_of_a_stencil_with_symbolic_sizes(rand):
    n = ts.var("n")
    A = ts.placeholder((n, 70), name="A")
    B = ts.compute((n - 2, 68), lambda y, x: A[y, x] + A[y + 2, x + 2], name="B")
    s = ts.create_schedule(B.op)
    yo, xo, yi, xi = s[B].tile(B.op.axis[0], B.op.axis[1], 4, 32)
    s[B].prefetch(A, xo, 1)
    kernel = ts.build(s, [A, B], name="prefetch_tiles")
    text = str(kernel.lowered)
    assert "prefetch A[A.ahead0, A.ahead1]" in text, text
    for rows in (3, 9, 14):
        a = rand((rows, 70))
        np.testing.assert_allclose(kernel(a), a[:-2, :68] + a[2:, 2:], rtol=1e-6)


def test_prefetch_of_a_stage_computed_at_the_root(rand):
    kernel = transposed_pair_kernel(16, lambda s, T, U: s[U].prefetch(T, U.op.axis[0], 3), "prefetch_intermediate")
    assert "prefetch T[" in str(kernel.lowered)
    check_transposed_pair(kernel, rand, 16)


@pytest.mark.parametrize("mistake, message", [
    ("not read", "prefetch of D at C.i: C does not read D"),
    ("computed at", "prefetch of T at U.i: T is not stored whole"),
    ("split after", "prefetch of A at C.i: i was split or fused after prefetch"),
])
def test_prefetch_refusals_name_the_tensor_and_loop(mistake, message):
    A, B, C = _matmul(8, 8)
    T = ts.compute((8, 8), lambda i, j: C[i, j] * 2.0, name="T")
    U = ts.compute((8, 8), lambda i, j: T[i, j] + 1.0, name="U")
    D = ts.placeholder((8,), name="D")
    s = ts.create_schedule(U.op)
    if mistake == "not read":
        s[C].prefetch(D, C.op.axis[0], 1)
    elif mistake == "computed at":
        s[T].compute_at(s[U], U.op.axis[0])
        s[U].prefetch(T, U.op.axis[0], 1)
    else:
        s[C].prefetch(A, C.op.axis[0], 1)
        s[C].split(C.op.axis[0], factor=2)
    with pytest.raises(ts.ScheduleError, match=message):
        ts.lower(s, [A, B, U])


@pytest.mark.parametrize("offset", [0, -1, 1.5, "1"])
def test_prefetch_offset_must_be_a_positive_int(offset):
    A, B, C = _matmul(8, 8)
    s = ts.create_schedule(C.op)
    with pytest.raises(ts.ScheduleError, match="prefetch offset of C.i"):
        s[C].prefetch(A, C.op.axis[0], offset)
    assert not s[C].prefetches


def test_a_prefetch_of_a_gathered_tensor_names_the_index_not_an_internal_class():
    A = ts.placeholder((16,), name="A")
    idx = ts.placeholder((8,), "int32", name="idx")
    G = ts.compute((8,), lambda i: A[idx[i]] * 2.0, name="G")
    s = ts.create_schedule(G.op)
    io, ii = s[G].split(G.op.axis[0], factor=4)
    s[G].prefetch(A, ii, 1)
    with pytest.raises(ts.ScheduleError, match=r"prefetch of A at G.i.inner: .*idx\[i\] is not affine") as err:
        ts.lower(s, [A, idx, G])
    assert "TensorRead" not in str(err.value)
