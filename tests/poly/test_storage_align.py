"""``Stage.storage_align`` (buffers padded by tesched.poly.buffers, indexed by ``ir.flat_index``): TVM's
rule for the stride of an aligned dimension, on cache stages and intermediates; results against NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import tesched as ts
from tesched.ir.nodes import Buffer, BufferScope

from .helpers import check_transposed_pair, transposed_pair_kernel


@pytest.mark.parametrize("shape, aligns, strides", [
    ((64, 16), {0: (32, 8)}, [40, 1]),         # rows of 16 padded to 40 = 32 + 8
    ((64, 16), {0: (16, 0)}, [16, 1]),         # already aligned: unchanged
    ((4, 6, 10), {1: (8, 1)}, [102, 17, 1]),   # a middle dimension: the outer stride follows
    ((4, 6, 10), {0: (64, 0), 1: (4, 0)}, [128, 12, 1]),  # 6 * 12 = 72 raised to 128
])
def test_aligned_strides_follow_tvms_rule(shape, aligns, strides):
    buf = Buffer("T", list(shape), "float32", BufferScope.LOCAL, aligns=aligns)
    assert buf.strides() == strides
    assert buf.element_count() == strides[0] * shape[0]


def _matmul(n: int):
    A = ts.placeholder((n, n), name="A")
    B = ts.placeholder((n, n), name="B")
    k = ts.reduce_axis((0, n), name="k")
    C = ts.compute((n, n), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


@pytest.mark.parametrize("n, factor, offset", [(64, 32, 8), (40, 16, 1), (24, 8, 0)])
def test_storage_align_of_a_cache_read_tile(rand, n, factor, offset):
    A, B, C = _matmul(n)
    s = ts.create_schedule(C.op)
    packed = s.cache_read(B, "local", [C])
    io, jo, ii, ji = s[C].tile(*C.op.axis, 8, 16)
    s[packed].compute_at(s[C], jo)
    s[packed].storage_align(s[packed].op.axis[0], factor, offset)
    s[C].vectorize(ji)
    kernel = ts.build(s, [A, B, C], name=f"align_cache_{n}_{factor}_{offset}")
    row = 16 + (offset - 16) % factor
    assert f"strides [{row}, 1] (storage_align)" in str(kernel.lowered)
    assert f"B_local[{n * row}]" in kernel.c_source
    a, b = rand((n, n)), rand((n, n))
    np.testing.assert_allclose(kernel(a, b), a.astype(np.float64) @ b, rtol=1e-4)


def test_storage_align_of_an_intermediate_with_a_transposed_reader(rand):
    def step(s, T, U):
        s[T].storage_align(T.op.axis[0], 32, 1)
        s[U].vectorize(U.op.axis[1])
    kernel = transposed_pair_kernel(32, step, "align_intermediate")
    assert "strides [33, 1]" in str(kernel.lowered)
    check_transposed_pair(kernel, rand, 32)


@pytest.mark.parametrize("mistake, message", [
    ("output", "storage_align of C: it is a kernel argument"),
    ("inlined", "storage_align of T: it is inlined"),
    ("symbolic", r"storage_align of T: its buffer has symbolic extents"),
])
def test_storage_align_refusals_at_lowering(mistake, message):
    n = ts.var("n") if mistake == "symbolic" else 8
    A = ts.placeholder((n, 8), name="A")
    T = ts.compute((n, 8), lambda i, j: A[i, j] * 2.0, name="T")
    C = ts.compute((n, 8), lambda i, j: T[i, j] + 1.0, name="C")
    s = ts.create_schedule(C.op)
    stage = s[C] if mistake == "output" else s[T]
    stage.storage_align(stage.op.axis[0], 16, 1)
    if mistake == "inlined":
        s[T].compute_inline()
    with pytest.raises(ts.ScheduleError, match=message):
        ts.lower(s, [A, C])


@pytest.mark.parametrize("args, message", [
    (lambda C: (C.op.reduce_axis[0], 16, 1), "storage_align of C: 'k' is not an axis of C"),
    (lambda C: (C.op.axis[0], 0, 0), "storage_align factor of C.i"),
    (lambda C: (C.op.axis[0], 16, 16), "storage_align offset of C.i must be an int from 0 to 15"),
    (lambda C: (C.op.axis[0], 16, -1), "storage_align offset of C.i"),
])
def test_storage_align_checks_its_arguments(args, message):
    A, B, C = _matmul(8)
    s = ts.create_schedule(C.op)
    with pytest.raises(ts.ScheduleError, match=message):
        s[C].storage_align(*args(C))
    assert not s[C].storage_aligns


@pytest.mark.parametrize("align", [False, True])
def test_the_second_output_of_a_folded_multi_output_stage_is_folded_and_aligned_too(rand, align):
    """A two-output stage stored at an outer loop with a folded buffer: its second buffer takes the same
    fold (and alignment), else it would be indexed past its end."""
    X = ts.placeholder((6, 8), "int32", name="X")
    B0, B1 = ts.compute((6, 8), lambda i, j: (X[i, j] & 12, X[i, j] >> 1), name="B")
    O = ts.compute((6, 8), lambda i, j: B0[i, j] + B1[i, j], name="O")
    s = ts.create_schedule(O.op)
    io, ii = s[O].split(O.op.axis[0], factor=2)
    one = s[O].fuse()
    s[B0].compute_at(s[O], ii)
    s[B0].store_at(s[O], one)
    if align:
        s[B0].storage_align(B0.op.axis[0], 16, 11)
    kernel = ts.build(s, [X, O], name=f"folded_pair_{align}")
    text = str(kernel.lowered)
    assert "B.v1[int32 * 1 * 8]" in text and text.count("folded modulo 1") == 2, text
    x = rand((6, 8), "int32", low=-1000, high=1000)
    np.testing.assert_array_equal(kernel(x), (x & 12) + (x >> 1))
