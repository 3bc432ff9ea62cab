"""``cache_read``, ``cache_write`` and ``rfactor`` (tesched.schedule.dataflow), alone and with ``compute_at``.

Each schedule is built and compared with NumPy; the lowered text is checked for where the new stage is
produced and how large its buffer is.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
from conv_helpers import loop_body
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tesched as ts

RTOL = ATOL = 1e-4


def declare_matmul(m: int, n: int, k: int):
    a = ts.placeholder((m, k), name="A")
    b = ts.placeholder((k, n), name="B")
    rk = ts.reduce_axis((0, k), name="k")
    c = ts.compute((m, n), lambda i, j: ts.sum(a[i, rk] * b[rk, j], axis=rk), name="C")
    return a, b, c


def matmul_inputs(m: int, n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32))


def check_matmul(kernel, m: int, n: int, k: int) -> None:
    a, b = matmul_inputs(m, n, k)
    np.testing.assert_allclose(kernel(a, b), a.astype(np.float64) @ b, rtol=RTOL, atol=ATOL)


# cache_read -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("m, n, k", [(16, 16, 16), (20, 24, 18)])
def test_cache_read_packs_tiles_of_both_matrices(m, n, k):
    a, b, c = declare_matmul(m, n, k)
    s = ts.create_schedule(c.op)
    b_packed = s.cache_read(b, "local", [c])
    a_packed = s.cache_read(a, "local", c)          # a single reader needs no list
    assert (b_packed.name, a_packed.name) == ("B.local", "A.local")
    i, j = s[c].op.axis
    io, jo, ii, ji = s[c].tile(i, j, 8, 8)
    ko, ki = s[c].split(s[c].op.reduce_axis[0], factor=4)
    s[c].reorder(io, jo, ko, ii, ki, ji)
    s[c].vectorize(ji)
    s[b_packed].compute_at(s[c], ko)
    s[a_packed].compute_at(s[c], jo)
    kernel = ts.build(s, [a, b, c], name="packed")
    text = str(kernel.lowered)
    assert f"allocate A.local[float32 * 8 * {k}]" in loop_body(text, "j.outer"), text
    assert "allocate B.local[float32 * 4 * 8]" in loop_body(text, "k.outer"), text
    tiles_of_c = -(-n // 8)
    assert kernel.lowered.redundancy["A.local"] == pytest.approx(tiles_of_c)   # one copy per column tile
    check_matmul(kernel, m, n, k)


def test_cache_read_at_the_root_is_a_full_copy():
    a, b, c = declare_matmul(12, 10, 9)
    s = ts.create_schedule(c.op)
    b_copy = s.cache_read(b, "global", [c])
    kernel = ts.build(s, [a, b, c], name="copied")
    text = str(kernel.lowered)
    assert text.index("produce B.global") < text.index("produce C"), text
    assert kernel.lowered.redundancy == {}
    check_matmul(kernel, 12, 10, 9)
    assert b_copy.shape == b.shape


def test_cache_read_for_one_of_two_readers():
    x = ts.placeholder((6, 10), name="x")
    doubled = ts.compute((6, 10), lambda i, j: x[i, j] * 2.0, name="doubled")
    shifted = ts.compute((6, 8), lambda i, j: x[i, j + 2] + doubled[i, j], name="shifted")
    s = ts.create_schedule(shifted.op)
    x_copy = s.cache_read(x, "local", [shifted])
    i, _ = s[shifted].op.axis
    s[x_copy].compute_at(s[shifted], i)
    kernel = ts.build(s, [x, shifted], name="one_reader")
    text = str(kernel.lowered)
    reader = text[text.index("produce shifted"):]
    assert reader.index("for i") < reader.index("allocate x.local[float32 * 1 * 8]") < reader.index("for j"), text
    assert "x.local" not in text[:text.index("produce shifted")].split("def ")[1], text
    assert kernel.lowered.redundancy == {"x.local": pytest.approx(0.8)}   # only columns 2..9 are read
    data = np.random.default_rng(1).standard_normal((6, 10)).astype(np.float32)
    np.testing.assert_allclose(kernel(data), data[:, 2:] + 2 * data[:, :8], rtol=RTOL, atol=ATOL)


# cache_write ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("m, n, k, tile", [(16, 16, 16, (8, 8)), (20, 28, 18, (8, 8)), (13, 11, 7, (4, 5))])
def test_cache_write_register_tile_at_the_tile_loop(m, n, k, tile):
    """TVM's GEMM tutorial: the write cache accumulates one tile of C, computed at C's tile loop."""
    a, b, c = declare_matmul(m, n, k)
    s = ts.create_schedule(c.op)
    c_local = s.cache_write(c, "local")
    assert c_local.name == "C.local" and c_local.shape == c.shape
    i, j = s[c].op.axis
    io, jo, ii, ji = s[c].tile(i, j, *tile)
    s[c].parallel(io)
    s[c_local].compute_at(s[c], jo)
    ci, cj = s[c_local].op.axis
    ko, ki = s[c_local].split(s[c_local].op.reduce_axis[0], factor=4)
    s[c_local].reorder(ko, ci, ki, cj)
    s[c_local].vectorize(cj)
    kernel = ts.build(s, [a, b, c], name="gemm_cache_write")
    text = str(kernel.lowered)
    body = loop_body(text, "j.outer")
    assert f"allocate C.local[float32 * {min(tile[0], m)} * {min(tile[1], n)}]" in body, text
    assert body.index("produce C.local") < body.index(" C["), text     # then the copy out to C
    assert kernel.lowered.redundancy == {"C.local": pytest.approx(1.0)}
    check_matmul(kernel, m, n, k)


def test_cache_write_at_the_root():
    a, b, c = declare_matmul(10, 12, 6)
    s = ts.create_schedule(c.op)
    c_global = s.cache_write(c, "global")
    i, j = s[c].op.axis
    s[c].vectorize(j)
    s[c_global].reorder(s[c_global].op.axis[0], s[c_global].op.reduce_axis[0], s[c_global].op.axis[1])
    kernel = ts.build(s, [a, b, c], name="write_root")
    text = str(kernel.lowered)
    assert text.index("produce C.global") < text.index("produce C {"), text
    check_matmul(kernel, 10, 12, 6)


def test_cache_write_of_an_elementwise_stage_with_a_producer_at_its_loop():
    x = ts.placeholder((9, 14), name="x")
    squared = ts.compute((9, 14), lambda i, j: x[i, j] * x[i, j], name="squared")
    blurred = ts.compute((9, 12), lambda i, j: squared[i, j] + squared[i, j + 1] + squared[i, j + 2],
                         name="blurred")
    s = ts.create_schedule(blurred.op)
    cache = s.cache_write(blurred, "local")
    i, j = s[blurred].op.axis
    io, ii = s[blurred].split(i, factor=4)
    s[cache].compute_at(s[blurred], io)
    ci, _ = s[cache].op.axis
    s[squared].compute_at(s[cache], ci)
    kernel = ts.build(s, [x, blurred], name="write_elementwise")
    text = str(kernel.lowered)
    assert "allocate squared[float32 * 1 * 14]" in loop_body(loop_body(text, "i.outer"), "i"), text
    data = np.random.default_rng(2).standard_normal((9, 14)).astype(np.float32)
    sq = data.astype(np.float64) ** 2
    np.testing.assert_allclose(kernel(data), sq[:, :12] + sq[:, 1:13] + sq[:, 2:], rtol=RTOL, atol=ATOL)


# rfactor --------------------------------------------------------------------------------------------
def declare_vector_reduction(n: int, reducer: str = "sum"):
    """``total[0] = reducer(A[k])``."""
    a = ts.placeholder((n,), name="A")
    k = ts.reduce_axis((0, n), name="k")
    total = ts.compute((1,), lambda i: getattr(ts, reducer)(a[k], axis=k), name="total")
    return a, k, total


@pytest.mark.parametrize("n, factor", [(64, 16), (61, 16), (30, 7)])
@pytest.mark.parametrize("factored, kind", [("inner", "vectorize"), ("inner", "parallel"),
                                            ("outer", "parallel"), ("outer", None)])
def test_rfactor_of_a_vector_sum(n, factor, factored, kind):
    a, k, total = declare_vector_reduction(n)
    s = ts.create_schedule(total.op)
    ko, ki = s[total].split(k, factor=factor)
    partial = s.rfactor(total, ki if factored == "inner" else ko)
    lanes = factor if factored == "inner" else -(-n // factor)
    assert partial.name == "total.rf" and partial.shape == (lanes, 1)
    if kind is not None:
        getattr(s[partial], kind)(s[partial].op.axis[0])
    kernel = ts.build(s, [a, total], name="vector_sum")
    text = str(kernel.lowered)
    assert text.index("produce total.rf") < text.index("produce total {"), text
    if kind is not None:
        assert f"{kind.replace('vectorize', 'vectorized')} for k.{factored}" in text, text
    data = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    np.testing.assert_allclose(kernel(data), [data.astype(np.float64).sum()], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("factor_axis", [0, 1, 2])
def test_rfactor_of_a_matmul(factor_axis):
    m, n, k = 6, 10, 20
    a, b, c = declare_matmul(m, n, k)
    s = ts.create_schedule(c.op)
    ko, ki = s[c].split(s[c].op.reduce_axis[0], factor=8)
    partial = s.rfactor(c, ko, factor_axis=factor_axis)
    shape = [m, n]
    shape.insert(factor_axis, 3)
    assert partial.shape == tuple(shape)
    s[partial].parallel(s[partial].op.axis[0])
    kernel = ts.build(s, [a, b, c], name="matmul_rfactor")
    check_matmul(kernel, m, n, k)


def test_rfactor_of_a_fused_reduction_over_two_axes():
    """A 2-D sum whose reduce loops were fused and split: the split's inner part becomes data parallel."""
    x = ts.placeholder((5, 7, 9), name="x")
    ry = ts.reduce_axis((0, 7), name="ry")
    rx = ts.reduce_axis((0, 9), name="rx")
    total = ts.compute((5,), lambda b: ts.sum(x[b, ry, rx], axis=[ry, rx]), name="total")
    s = ts.create_schedule(total.op)
    fused = s[total].fuse(ry, rx)
    _, inner = s[total].split(fused, factor=8)
    partial = s.rfactor(total, inner, factor_axis=1)
    assert partial.shape == (5, 8)
    s[partial].vectorize(s[partial].op.axis[1])
    kernel = ts.build(s, [x, total], name="fused_rfactor")
    data = np.random.default_rng(4).standard_normal((5, 7, 9)).astype(np.float32)
    np.testing.assert_allclose(kernel(data), data.astype(np.float64).sum(axis=(1, 2)), rtol=RTOL, atol=ATOL)


def test_rfactor_stage_computed_at_the_consumer_row():
    """Row sums: the partial sums of each row are computed inside that row's loop."""
    x = ts.placeholder((7, 50), name="x")
    k = ts.reduce_axis((0, 50), name="k")
    rows = ts.compute((7,), lambda i: ts.sum(x[i, k], axis=k), name="rows")
    s = ts.create_schedule(rows.op)
    _, ki = s[rows].split(k, factor=8)
    partial = s.rfactor(rows, ki)
    s[partial].compute_at(s[rows], s[rows].op.axis[0])
    s[partial].vectorize(s[partial].op.axis[0])
    kernel = ts.build(s, [x, rows], name="row_sums")
    text = str(kernel.lowered)
    assert "allocate rows.rf[float32 * 8 * 1]" in loop_body(text, "i"), text
    assert kernel.lowered.redundancy == {"rows.rf": pytest.approx(1.0)}
    data = np.random.default_rng(6).standard_normal((7, 50)).astype(np.float32)
    np.testing.assert_allclose(kernel(data), data.astype(np.float64).sum(axis=1), rtol=RTOL, atol=ATOL)


def test_rfactor_of_a_max_reduction():
    x, k, top = declare_vector_reduction(45, "max")
    s = ts.create_schedule(top.op)
    _, ki = s[top].split(k, factor=16)
    partial = s.rfactor(top, ki)
    s[partial].vectorize(s[partial].op.axis[0])
    kernel = ts.build(s, [x, top], name="max_rfactor")
    data = -np.abs(np.random.default_rng(7).standard_normal(45)).astype(np.float32) - 1
    np.testing.assert_allclose(kernel(data), [data.max()], rtol=RTOL, atol=ATOL)


# compositions -----------------------------------------------------------------------------------------
def test_cache_write_cache_read_and_rfactor_compose():
    """C = A @ B with A packed per row tile, C accumulated in a write cache, and a vector sum of C's rows
    computed with rfactor."""
    m, n, k = 12, 20, 10
    a, b, c = declare_matmul(m, n, k)
    rj = ts.reduce_axis((0, n), name="rj")
    row_sum = ts.compute((m,), lambda i: ts.sum(c[i, rj], axis=rj), name="row_sum")
    s = ts.create_schedule(row_sum.op)
    a_packed = s.cache_read(a, "local", [c])
    c_local = s.cache_write(c, "local")
    i, j = s[c].op.axis
    io, jo, ii, ji = s[c].tile(i, j, 4, 8)
    s[c_local].compute_at(s[c], jo)
    s[a_packed].compute_at(s[c], io)
    _, rji = s[row_sum].split(rj, factor=4)
    partial = s.rfactor(row_sum, rji)
    s[partial].vectorize(s[partial].op.axis[0])
    kernel = ts.build(s, [a, b, row_sum], name="composed")
    text = str(kernel.lowered)
    assert "allocate A.local[float32 * 4 * 10]" in loop_body(text, "i.outer"), text
    assert "allocate C.local[float32 * 4 * 8]" in loop_body(text, "j.outer"), text
    data_a, data_b = matmul_inputs(m, n, k)
    expected = (data_a.astype(np.float64) @ data_b).sum(axis=1)
    np.testing.assert_allclose(kernel(data_a, data_b), expected, rtol=RTOL, atol=1e-3)


@pytest.mark.parametrize("factor_axis", [0, 1])
def test_rfactor_of_a_scatter_gives_parallel_partial_histograms(rand, factor_axis):
    img = ts.placeholder((12, 10), "int32", name="img")
    ry, rx = ts.reduce_axis((0, 12), name="ry"), ts.reduce_axis((0, 10), name="rx")
    hist = ts.scatter_add((16,), img[ry, rx], 1, [ry, rx], where=img[ry, rx] > 0, name="hist")
    s = ts.create_schedule(hist.op)
    yo, _ = s[hist].split(ry, nparts=4)
    rf = s.rfactor(hist, yo, factor_axis=factor_axis)
    assert rf.shape == ((4, 16) if factor_axis == 0 else (16, 4))
    s[rf].parallel(s[rf].leaf_iter_vars[0])
    s[hist].vectorize(hist.op.axis[0])
    text = str(ts.lower(s, [img, hist]))
    assert "parallel for ry.outer" in text and "atomic" not in text
    f = ts.build(s, [img, hist], name=f"hist_rfactor_{factor_axis}")
    a = rand((12, 10), "int32", 0, 15)
    expected = np.bincount(a.ravel(), minlength=16)
    expected[0] = 0
    np.testing.assert_array_equal(f(a), expected)


def test_cache_write_of_a_scatter_or_a_scan_is_refused():
    r = ts.reduce_axis((0, 8), name="r")
    H = ts.scatter_add((4,), r % 4, 1, r, name="H")
    with pytest.raises(ts.ScheduleError, match="cache_write of H: it is a scatter"):
        ts.create_schedule(H.op).cache_write(H, "local")


@pytest.mark.parametrize("m, n, k", [(16, 16, 16), (13, 11, 7)])
def test_cache_write_after_split_moves_the_loops_to_the_cache(m, n, k):
    """TVM accepts cache_write on a stage already split: the cache computes with those loops, the
    original stage starts again from its axes (the user's loop variables now name loops of the cache)."""
    a, b, c = declare_matmul(m, n, k)
    s = ts.create_schedule(c.op)
    i, j = c.op.axis
    io, jo, ii, ji = s[c].tile(i, j, 4, 8)
    ko, ki = s[c].split(c.op.reduce_axis[0], factor=3)
    s[c].reorder(io, jo, ko, ii, ki, ji)
    s[c].parallel(io)
    c_local = s.cache_write(c, "local")
    cache = s[c_local]
    assert [v.name for v in cache.leaf_iter_vars] == ["i.outer", "j.outer", "k.outer", "i.inner", "k.inner",
                                                      "j.inner"]
    assert cache.leaf_iter_vars[0] is io and cache.iter_var_attrs[io] == "parallel"
    assert s[c].leaf_iter_vars == list(c.op.axis) and not s[c].relations
    cache.vectorize(ji)                     # the handles held before cache_write schedule the cache
    with pytest.raises(ts.ScheduleError, match="not a loop of C"):
        s[c].vectorize(ji)
    s[c].vectorize(s[c].op.axis[1])
    kernel = ts.build(s, [a, b, c], name="cache_write_after_split")
    text = str(kernel.lowered)
    assert text.index("produce C.local") < text.index("parallel for i.outer") < text.index("produce C {"), text
    check_matmul(kernel, m, n, k)


def test_cache_write_after_split_keeps_producers_at_the_moved_loops():
    x = ts.placeholder((9, 14), name="x")
    squared = ts.compute((9, 14), lambda i, j: x[i, j] * x[i, j], name="squared")
    blurred = ts.compute((9, 12), lambda i, j: squared[i, j] + squared[i, j + 2], name="blurred")
    s = ts.create_schedule(blurred.op)
    io, ii = s[blurred].split(blurred.op.axis[0], factor=4)
    s[squared].compute_at(s[blurred], io)
    cache = s.cache_write(blurred, "local")
    assert s[squared].attach_stage is s[cache] and s[squared].attach_ivar is io
    s[cache].compute_at(s[blurred], s[blurred].op.axis[0])
    kernel = ts.build(s, [x, blurred], name="write_after_split_producer")
    data = np.random.default_rng(3).standard_normal((9, 14)).astype(np.float32)
    sq = data.astype(np.float64) ** 2
    np.testing.assert_allclose(kernel(data), sq[:, :12] + sq[:, 2:], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("which", ["inner", "outer"])
def test_rfactor_of_a_symbolic_reduction(which):
    """rfactor with symbolic extents: a reduction over n split by 8; the partial stage has 8 or
    (n + 7) // 8 rows and guards the padding of the last slice."""
    n = ts.var("n")
    a = ts.placeholder((4, n), name="A")
    k = ts.reduce_axis((0, n), name="k")
    c = ts.compute((4,), lambda i: ts.sum(a[i, k] * a[i, k], axis=k), name="C")
    s = ts.create_schedule(c.op)
    ko, ki = s[c].split(k, factor=8)
    rf = s.rfactor(c, ki if which == "inner" else ko)
    if which == "inner":
        s[rf].vectorize(s[rf].op.axis[0])
        assert rf.shape[0] == 8
    else:
        s[c].parallel(c.op.axis[0])
    kernel = ts.build(s, [a, c], name=f"rfactor_symbolic_{which}")
    for m in (8, 13, 3, 40):
        data = np.random.default_rng(m).standard_normal((4, m)).astype(np.float32)
        np.testing.assert_allclose(kernel(data), (data.astype(np.float64) ** 2).sum(1), rtol=RTOL, atol=ATOL)


# rfactor of tuple reductions ---------------------------------------------------------------------------
def _lane_partials(values: np.ndarray, factor: int, arg) -> tuple[np.ndarray, np.ndarray]:
    """The partial (index, value) of each lane ``l`` of an rfactor over ``k % factor``: the best of
    ``values[:, l::factor]`` and its index in ``values`` (NumPy's ties and NaN); a lane without elements
    keeps the reducer's identity."""
    m, n = values.shape
    index = np.full((m, factor), np.iinfo(np.int32).max, np.int64)
    value = np.full((m, factor), -np.inf if arg is np.argmax else np.inf, values.dtype)
    for lane in range(min(factor, n)):
        index[:, lane] = arg(values[:, lane::factor], axis=1) * factor + lane
        value[:, lane] = np.take_along_axis(values, index[:, lane:lane + 1], axis=1)[:, 0]
    return index, value


def _arg_input(rng: np.random.Generator, m: int, n: int) -> np.ndarray:
    """Small integers as float32 (many ties), some NaN rows and some rows of one repeated value."""
    values = rng.integers(-3, 4, size=(m, n)).astype(np.float32)
    values[0, [n - 1, n // 2]] = np.nan
    values[-1] = 2.0
    return values


@pytest.mark.parametrize("which", ["argmax", "argmin"])
@pytest.mark.parametrize("n, factor", [(64, 16), (37, 8)])
@pytest.mark.parametrize("kind", ["vectorize", "parallel"])
def test_rfactor_of_argmax_returns_every_partial(which, n, factor, kind):
    """``s.rfactor`` of a tuple reduction returns one partial tensor per component (as TVM); both are
    build arguments here, compared with NumPy lane by lane, and the final stage combines both."""
    m = 6
    val = ts.placeholder((m, n), name="val")
    k = ts.reduce_axis((0, n), name="k")
    index, best = ts.compute((m,), lambda i: getattr(ts, which)(val[i, k], axis=k), name="T")
    s = ts.create_schedule(index.op)
    _, ki = s[index].split(k, factor=factor)
    partials = s.rfactor(best, ki, factor_axis=1)
    assert isinstance(partials, list) and len(partials) == 2
    rf_index, rf_value = partials
    assert (rf_index.dtype, rf_value.dtype, rf_index.shape, rf_value.shape) == ("int32", "float32", (m, factor),
                                                                               (m, factor))
    assert s[rf_index] is s[rf_value] and rf_index.op is rf_value.op
    rf = s[rf_index]
    i, lane = rf.op.axis
    if kind == "vectorize":
        rf.reorder(i, rf.op.reduce_axis[0], lane)
        rf.vectorize(lane)
    else:
        rf.parallel(i)
    kernel = ts.build(s, [val, rf_index, rf_value, index, best], name=f"{which}_rfactor")
    text = str(kernel.lowered)
    assert "T.rf[" in loop_body(text, "k.inner.v") and "T.rf.v1[" in loop_body(text, "k.inner.v"), text
    arg = getattr(np, which)
    values = _arg_input(np.random.default_rng(n), m, n)
    got_rf_index, got_rf_value, got_index, got_best = kernel(values)
    want_rf_index, want_rf_value = _lane_partials(values, factor, arg)
    np.testing.assert_array_equal(got_rf_index, want_rf_index)
    np.testing.assert_array_equal(got_rf_value, want_rf_value)
    np.testing.assert_array_equal(got_index, arg(values, axis=1))
    np.testing.assert_array_equal(got_best, getattr(np, which.replace("arg", ""))(values, axis=1))


def test_rfactor_of_a_two_value_comm_reducer_of_two_dtypes(rand):
    """A user reducer of (float32 sum, int32 maximum): both partials parallel over the lanes, the final
    stage's two outputs from both partial tensors."""
    sum_and_max = ts.comm_reducer(lambda x, y: (x[0] + y[0], ts.max(x[1], y[1])),
                                  lambda t0, t1: (ts.const(0, t0), ts.min_value(t1)), name="sum_and_max")
    m, n = 5, 45
    a = ts.placeholder((m, n), name="a")
    b = ts.placeholder((m, n), "int32", name="b")
    k = ts.reduce_axis((0, n), name="k")
    total, top = ts.compute((m,), lambda i: sum_and_max((a[i, k], b[i, k]), axis=k), name="R")
    s = ts.create_schedule(total.op)
    ko, _ = s[total].split(k, factor=10)
    rf_total, rf_top = s.rfactor(top, ko)
    assert rf_total.shape == rf_top.shape == (5, m) and (rf_total.dtype, rf_top.dtype) == ("float32", "int32")
    s[rf_total].parallel(s[rf_total].op.axis[0])
    kernel = ts.build(s, [a, b, rf_total, rf_top, total, top], name="sum_and_max_rfactor")
    av, bv = rand((m, n)), rand((m, n), "int32", -1000, 1000)
    got = kernel(av, bv)
    padded = np.pad(av.astype(np.float64), ((0, 0), (0, 5)))
    np.testing.assert_allclose(got[0], padded.reshape(m, 5, 10).sum(axis=2).T, rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(got[1], np.pad(bv, ((0, 0), (0, 5)), constant_values=np.iinfo(np.int32).min)
                                  .reshape(m, 5, 10).max(axis=2).T)
    np.testing.assert_allclose(got[2], av.astype(np.float64).sum(axis=1), rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(got[3], bv.max(axis=1))


def test_rfactor_of_a_single_value_comm_reducer_returns_one_tensor():
    product = ts.comm_reducer(lambda x, y: x * y, lambda t: ts.const(1, t), name="product")
    a = ts.placeholder((24,), name="a")
    k = ts.reduce_axis((0, 24), name="k")
    p = ts.compute((1,), lambda i: product(a[k], axis=k), name="P")
    s = ts.create_schedule(p.op)
    _, ki = s[p].split(k, factor=8)
    partial = s.rfactor(p, ki)
    assert isinstance(partial, ts.Tensor) and partial.shape == (8, 1)
    s[partial].vectorize(s[partial].op.axis[0])
    data = np.random.default_rng(3).uniform(0.9, 1.1, 24).astype(np.float32)
    np.testing.assert_allclose(ts.build(s, [a, p], name="product_rfactor")(data), [np.prod(data)], rtol=RTOL)


@lru_cache(maxsize=None)
def _argmax_rfactor_of_run_time_sizes(which: str):
    """One kernel for every shape: rfactor into 8 vectorized lanes (the last slice of a row guarded)."""
    val = ts.placeholder((ts.var("m"), ts.var("n")), name="val")
    k = ts.reduce_axis((0, val.shape[1]), name="k")
    index, best = ts.compute((val.shape[0],), lambda i: getattr(ts, which)(val[i, k], axis=k), name="T")
    s = ts.create_schedule(index.op)
    _, ki = s[index].split(k, factor=8)
    rf_index, rf_value = s.rfactor(index, ki, factor_axis=1)
    rf = s[rf_value]
    i, lane = rf.op.axis
    rf.reorder(i, rf.op.reduce_axis[0], lane)
    rf.vectorize(lane)
    return ts.build(s, [val, rf_index, rf_value, index, best], name=f"{which}_rfactor_sizes")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.sampled_from(["argmax", "argmin"]), m=st.integers(1, 4), n=st.integers(1, 50),
       seed=st.integers(0, 2 ** 16))
def test_rfactor_of_argmax_over_run_time_sizes_matches_numpy(which, m, n, seed):
    """Rows shorter than the lanes (empty lanes keep the identity), not a multiple of them, NaN and ties."""
    values = _arg_input(np.random.default_rng(seed), m, n)
    rf_index, rf_value, index, best = _argmax_rfactor_of_run_time_sizes(which)(values)
    arg = getattr(np, which)
    np.testing.assert_array_equal(index, arg(values, axis=1))
    np.testing.assert_array_equal(best, getattr(np, which.replace("arg", ""))(values, axis=1))
    want_index, want_value = _lane_partials(values, 8, arg)
    np.testing.assert_array_equal(rf_index, want_index)
    np.testing.assert_array_equal(rf_value, want_value)
