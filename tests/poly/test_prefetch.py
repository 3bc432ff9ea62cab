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


def _deep_prefetch():
    """A fuzz campaign find (schedules case 67): conv-relu-conv with conv1 computed at an inner loop of
    conv2's pad (its rows bounded), conv1's pad computed at conv1's innermost reduction loop and
    prefetching X there: a nest of 21 loops around the prefetch."""
    X = ts.placeholder((2, 7, 7), name="X")
    W1, W2 = ts.placeholder((2, 2, 3, 3), name="W1"), ts.placeholder((2, 2, 3, 3), name="W2")

    def padded_conv(x, weight, name):
        pad = ts.compute((2, 9, 9), lambda c, h, w: ts.if_then_else(
            ts.all(h >= 1, h <= 7, w >= 1, w <= 7), x[c, h - 1, w - 1], 0.0), name=f"{name}_pad")
        rc, rh, rw = ts.reduce_axis((0, 2), "rc"), ts.reduce_axis((0, 3), "rh"), ts.reduce_axis((0, 3), "rw")
        return pad, ts.compute((2, 7, 7), lambda o, h, w: ts.sum(
            pad[rc, h + rh, w + rw] * weight[o, rc, rh, rw], axis=[rc, rh, rw]), name=name)

    pad1, conv1 = padded_conv(X, W1, "conv1")
    relu = ts.compute((2, 7, 7), lambda o, h, w: ts.maximum(conv1[o, h, w], 0.0), name="relu")
    pad2, conv2 = padded_conv(relu, W2, "conv2")
    s = ts.create_schedule(conv2.op)
    s[conv2].tile(conv2.op.axis[0], conv2.op.axis[1], 4, 4)
    s[conv2].split(conv2.op.axis[2], factor=4)
    s[conv2].split(conv2.op.reduce_axis[0], factor=1)
    c, h, w = pad2.op.axis
    co, ho, ci, hi = s[pad2].tile(c, h, 1, 2)
    wo, wi = s[pad2].split(w, nparts=2)
    s[pad2].reorder(ho, wi, co, wo, hi, ci)
    s[pad2].vectorize(ci)
    s[relu].compute_inline()
    s[conv1].compute_at(s[pad2], ci)
    o, h, w = conv1.op.axis
    s[conv1].bound_extent(h, 7)
    _, _, _, h_inner = s[conv1].tile(o, h, 1, 3)
    rc, rh, rw = conv1.op.reduce_axis
    _, rh_inner = s[conv1].split(rh, factor=1)
    rw_outer, rw_inner = s[conv1].split(rw, factor=7)
    s[conv1].fuse(rh_inner, rw_outer)
    s[pad1].compute_at(s[conv1], rw_inner)
    s[pad1].store_at(s[conv1], h_inner)
    c, h, w = pad1.op.axis
    s[pad1].tile(c, h, 3, 1)
    _, w_inner = s[pad1].split(w, nparts=1)
    s[pad1].vectorize(w_inner)
    s[pad1].prefetch(X, w_inner, 2)
    return s, [X, W1, W2, conv2]


def _conv3x3(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """3x3 convolution with zero padding 1, in float64."""
    size = x.shape[1]
    padded = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1)))
    return sum(np.einsum("chw,oc->ohw", padded[:, r:r + size, q:q + size], weight[:, :, r, q])
               for r in range(3) for q in range(3))


def test_the_box_of_a_prefetch_deep_in_a_nest_is_found_within_a_small_isl_budget(rand):
    """The region read two iterations ahead carries the equalities and redundant constraints of 21 loops;
    isl took over 500,000 operations (a second) for its minimum until they are removed (now under
    50,000: given 200,000 here). The kernel still matches NumPy."""
    import islpy as isl

    from tesched.poly.prefetch import plan_prefetches

    from .helpers import model_of
    s, args = _deep_prefetch()
    model = model_of(s, args)
    ctx = isl.DEFAULT_CONTEXT
    ctx.set_max_operations(200_000)
    ctx.reset_operations()
    try:
        plan_prefetches(model)
    finally:
        ctx.set_max_operations(0)
        ctx.reset_operations()
    x, w1, w2 = rand((2, 7, 7)), rand((2, 2, 3, 3)), rand((2, 2, 3, 3))
    want = _conv3x3(np.maximum(_conv3x3(x, w1), 0), w2)
    np.testing.assert_allclose(ts.build(s, args, name="deep_prefetch")(x, w1, w2), want, rtol=1e-4, atol=1e-4)
