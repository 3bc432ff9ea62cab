"""Index arithmetic simplified with the loops' ranges: packed layouts and cache copies vectorize, and the
C reads like hand-written C."""
import re

import numpy as np
import pytest

import tesched as ts
from targets import pinned

pytestmark = pytest.mark.usefixtures("host_target")   # tests of the SIMD code and layouts this CPU gets


def packed_gemm(n=64, bn=16, kfactor=4, write_cache=False, name="packed"):
    """TVM's tutorial's array packing: ``packedB[n // bn, k, n % bn]`` read in the vectorized loop."""
    k = ts.reduce_axis((0, n), "k")
    A = ts.placeholder((n, n), name="A")
    B = ts.placeholder((n, n), name="B")
    packedB = ts.compute((n // bn, n, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
    C = ts.compute((n, n), lambda m, j: ts.sum(A[m, k] * packedB[j // bn, k, j % bn], axis=k), name="C")
    s = ts.create_schedule(C.op)
    if write_cache:
        CC = s.cache_write(C, "global")
        mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
        s[CC].compute_at(s[C], no)
        mc, nc = s[CC].op.axis
        ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=kfactor)
        s[CC].reorder(ko, mc, ki, nc)
        s[CC].vectorize(nc)
        s[CC].unroll(ki)
    else:
        mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
        ko, ki = s[C].split(s[C].op.reduce_axis[0], factor=kfactor)
        s[C].reorder(mo, no, ko, mi, ki, ni)
        s[C].vectorize(ni)
    x, y, z = s[packedB].op.axis
    s[packedB].vectorize(z)
    return ts.build(s, [A, B, C], name=name)


def check(f, n=64):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_packed_layout_vectorizes_without_division():
    code, f = pinned(lambda: packed_gemm(name="packed_plain"))
    check(f)
    assert "ts_floordiv" not in code.c_source and "ts_floormod" not in code.c_source
    assert "omp simd" not in code.c_source and "ts_vload_f32x16(&packedB" in code.c_source


def test_write_cache_tile_indices_start_at_zero():
    f = packed_gemm(write_cache=True, name="packed_cache")
    check(f)
    assert "ts_floordiv" not in f.c_source and "omp simd" not in f.c_source
    # the tile's own offsets cancel: C_global is indexed by the tile loops alone
    for index in re.findall(r"C_global\[([^\]]*)\]", f.c_source):
        assert "outer" not in index, index


def test_lower_shows_the_packed_read_simplified():
    n, bn = 64, 16
    k = ts.reduce_axis((0, n), "k")
    A = ts.placeholder((n, n), name="A")
    P = ts.compute((n // bn, n, bn), lambda x, y, z: A[y, x * bn + z], name="P")
    C = ts.compute((n, n), lambda m, j: ts.sum(A[m, k] * P[j // bn, k, j % bn], axis=k), name="C")
    s = ts.create_schedule(C.op)
    s[C].split(C.op.axis[1], bn)
    text = str(ts.lower(s, [A, C]))
    assert "P[j.outer, k, j.inner]" in text, text


def test_no_cancelled_terms_in_c():
    A = ts.placeholder((28, 28), name="A")
    B = ts.compute((28, 28), lambda i, j: A[i, j] + 1.0, name="B")
    s = ts.create_schedule(B.op)
    f = s[B].fuse(*s[B].op.axis)
    fo, fi = s[B].split(f, 16)
    kernel = ts.build(s, [A, B], name="fused_simplified")
    a = np.random.default_rng(2).standard_normal((28, 28)).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a + 1, rtol=1e-6)
    assert not re.search(r"\((\w+) - \1\)", kernel.c_source)


@pytest.mark.parametrize("target", ["x86-64-avx2", "x86-64-avx512"])
def test_a_tile_at_a_loop_fused_over_the_batch_keeps_its_accumulators_in_registers(target, rand):
    """A pointwise convolution of a batch of 2: its parallel loop fuses the images and the tiles of output
    channels (``f // 4``, ``f % 4``), which the tile's origin (isl's C divisions) and its accesses (floor
    divisions once simplified) both contain; simplified alike, they cancel, the tile's offsets are
    constants and its accumulators registers."""
    import tesched.nn as nn
    x, w = ts.placeholder((2, 16, 49, 16), name="x"), ts.placeholder((24, 16, 1, 1), name="w")
    y = nn.relu(nn.conv2d(x, w))

    def make():
        return ts.build(nn.default_schedule(y), [x, w, y], name="pointwise_batch")
    code, kernel = pinned(make, target)
    with ts.Target(target):
        promotions = ts.lower(nn.default_schedule(y), [x, w, y]).register_promotions()
    assert [p.buffer for p in promotions if p.promoted] == ["conv2d"] and "float conv2d[" not in code.c_source
    xa, wa = rand(x.shape, low=-1), rand(w.shape, low=-1)
    expected = np.maximum(np.einsum("kc,nchw->nkhw", wa[:, :, 0, 0].astype(np.float64), xa.astype(np.float64)), 0)
    np.testing.assert_allclose(kernel(xa, wa), expected, rtol=1e-5, atol=1e-5)
