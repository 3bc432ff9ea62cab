"""Tests of tesched.transform.registers: small local buffers promoted to variables: the partial results
of ``rfactor`` lanes (a vector written lane-wise, then read element by element), against NumPy, masked
vector reads (padding inside a vectorized loop), and the bound of the target's register file (what
``lower()`` reports, and a fused convolution whose padded tile stays an array)."""
import re

import numpy as np
import pytest

import tesched as ts
import tesched.nn as nn
from tesched.ir import nodes as ir
from tesched.ir.visitor import walk_stmts
from tesched.target import current_target
from tesched.te.expr import Binary, Const, Select
from tesched.te.visit import walk
from tesched.lower.pipeline import lower_for_target
from tesched.transform.registers import RegisterBudget, promote, promote_with_report
from targets import pinned
from tests.nn.helpers import conv2d_reference

TARGETS = ["x86-64-avx512", "x86-64-avx2", "x86-64", "c"]

needs_simd = pytest.mark.skipif(current_target().vector_bytes < 32, reason="needs 8 float32 lanes of SIMD")


def rfactor_at_rows(compute, m: int, n: int, lanes: int, rows: int = 1):
    """``compute(val, k)`` reduced over rows of ``val``; the reduce loop split by ``lanes``, its inner part
    rfactor-ed into partial results computed at each row (at each tile of ``rows`` rows when more than
    one), their lanes vectorized."""
    val = ts.placeholder((m, n), name="val")
    k = ts.reduce_axis((0, n), name="k")
    outputs = ts.compute((m,), lambda i: compute(val[i, k], k), name="R")
    first = outputs[0] if isinstance(outputs, tuple) else outputs
    s = ts.create_schedule(first.op)
    _, ki = s[first].split(k, factor=lanes)
    partial = s.rfactor(first, ki, factor_axis=1)
    rf = s[partial[0] if isinstance(partial, list) else partial]
    i, lane = rf.op.axis
    rf.reorder(i, *rf.op.reduce_axis, lane)
    rf.vectorize(lane)
    if rows > 1:
        outer, _ = s[first].split(s[first].op.axis[0], factor=rows)
        rf.unroll(i)
        rf.compute_at(s[first], outer)
    else:
        rf.compute_at(s[first], s[first].op.axis[0])
    return ts.build(s, [val, *(outputs if isinstance(outputs, tuple) else [outputs])], name="rows_rfactor")


@needs_simd
def test_rfactor_lanes_of_a_sum_stay_in_a_vector_register(rand):
    f = rfactor_at_rows(lambda x, k: ts.sum(x, axis=k), 5, 64, 8)
    assert "R_rf_r0" in f.c_source and "R_rf[" not in f.c_source, f.c_source
    assert "(R_rf_r0)[7]" in f.c_source      # the final sum reads the lanes
    values = rand((5, 64))
    np.testing.assert_allclose(f(values), values.astype(np.float64).sum(axis=1), rtol=1e-5)


@needs_simd
def test_rfactor_lanes_of_argmax_stay_in_vector_registers(rand):
    code, f = pinned(lambda: rfactor_at_rows(lambda x, k: ts.argmax(x, axis=k), 6, 80, 16))
    assert "R_rf_r0" in code.c_source and "R_rf_v1_r0" in code.c_source and "R_rf[" not in code.c_source, code.c_source
    values = np.round(rand((6, 80)) * 4)          # ties across lanes: the first index wins
    values[2, [70, 3]] = np.nan
    index, best = f(values)
    np.testing.assert_array_equal(index, np.argmax(values, axis=1))
    np.testing.assert_array_equal(best, np.max(values, axis=1))


LANE_READ = re.compile(r"_rf_r\d+\)\[\d+\]")
"""A single lane of a promoted vector variable read in the generated C."""


@needs_simd
def test_lanes_of_several_partial_vectors_stay_in_memory(rand):
    # one partial vector per row of a tile: the combine loop runs over the vectors, which the C compiler
    # vectorizes across rows from memory; lane reads of variables would be chains of scalar extracts
    f = rfactor_at_rows(lambda x, k: ts.sum(x, axis=k), 8, 64, 8, rows=4)
    assert not LANE_READ.search(f.c_source), f.c_source
    values = rand((8, 64))
    np.testing.assert_allclose(f(values), values.astype(np.float64).sum(axis=1), rtol=1e-5)


@needs_simd
def test_dense_matrix_vector_product_does_not_read_partial_sums_lane_by_lane(rand):
    x, w = ts.placeholder((1, 512), name="x"), ts.placeholder((128, 512), name="w")
    y = nn.dense(x, w)
    kernel = ts.build(nn.default_schedule([y]), [x, w, y], name="matvec")
    assert not LANE_READ.search(kernel.c_source), kernel.c_source
    xa, wa = rand(x.shape, low=-1), rand(w.shape, low=-1)
    np.testing.assert_allclose(kernel(xa, wa), xa.astype(np.float64) @ wa.T.astype(np.float64), rtol=1e-4, atol=1e-4)
def _masked_copy(read_at: int):
    """``T[0:8] = X[0:8]; O[0:8] = T[read_at:read_at + 8] where X > 0.5 (else 0)``, ``T`` local."""
    x, out = (ir.Buffer(name, [8], "float32", ir.BufferScope.ARG) for name in "XO")
    local = ir.Buffer("T", [8], "float32", ir.BufferScope.LOCAL)
    mask = Binary("gt", ir.VLoad(x, Const(0, "int64"), 8), ir.Broadcast(Const(0.5, "float32"), 8),
                  ir.vector_dtype("int32", 8))
    body = ir.seq([ir.VStore(local, Const(0, "int64"), ir.VLoad(x, Const(0, "int64"), 8)),
                   ir.VStore(out, Const(0, "int64"), ir.VLoadMasked(local, Const(read_at, "int64"), mask, 8))])
    return ir.Allocate(local, body), local


def _values(stmt):
    return [n for s in walk_stmts(stmt) if isinstance(s, (ir.VStore, ir.Assign)) for n in walk(s.value)]


def test_masked_read_of_a_stored_slot_selects_from_the_register():
    stmt, local = _masked_copy(0)
    promoted = promote(stmt)
    assert isinstance(promoted, ir.Registers)
    values = _values(promoted)
    assert not any(getattr(n, "buffer", None) is local for n in values)
    blend = [n for n in values if isinstance(n, Select)]
    assert blend and blend[0].true_value is promoted.variables[0]
    zero = blend[0].false_value
    assert isinstance(zero, ir.Broadcast) and isinstance(zero.value, Const) and zero.value.value == 0


def test_masked_read_of_lanes_no_store_writes_keeps_the_buffer_in_memory():
    """Lanes -1..6: lane -1 belongs to no slot a store writes, so the read stays a masked memory read."""
    stmt, local = _masked_copy(-1)
    kept = promote(stmt)
    assert isinstance(kept, ir.Allocate) and kept.buffer is local
    assert any(isinstance(n, ir.VLoadMasked) and n.buffer is local for n in _values(kept))


def _scalar_slots(elements: int, used: int):
    """``T[k] = X[k]`` then ``O[k] = T[k]`` for the first ``used`` of ``elements`` float32 of a local ``T``."""
    x, out = (ir.Buffer(name, [elements], "float32", ir.BufferScope.ARG) for name in "XO")
    local = ir.Buffer("T", [elements], "float32", ir.BufferScope.LOCAL)
    at = [Const(k, "int64") for k in range(used)]
    body = ir.seq([ir.Store(local, [k], ir.Load(x, [k])) for k in at] + [ir.Store(out, [k], ir.Load(local, [k])) for k in at])
    return ir.Allocate(local, body)


@pytest.mark.parametrize("target", TARGETS)
def test_promotion_stops_at_the_register_file_of_each_target(target):
    """One scalar variable per register: as many as the target has are promoted, one more keeps the array,
    and so does a buffer of more bytes than the whole register file (whatever it is accessed like)."""
    budget = RegisterBudget.of(ts.Target(target))
    fits, (promoted,) = promote_with_report(_scalar_slots(budget.registers, budget.registers), ts.Target(target))
    assert isinstance(fits, ir.Registers) and len(fits.variables) == budget.registers
    assert promoted.promoted and promoted.registers == budget.registers
    over, (kept,) = promote_with_report(_scalar_slots(budget.registers + 1, budget.registers + 1), ts.Target(target))
    assert isinstance(over, ir.Allocate) and not kept.promoted and not kept.over_bytes
    assert kept.registers == budget.registers + 1
    elements = budget.bytes // 4 + 1
    large, (kept,) = promote_with_report(_scalar_slots(elements, 2), ts.Target(target))
    assert isinstance(large, ir.Allocate) and kept.over_bytes and kept.nbytes > budget.bytes
    assert f"T ({elements} x float32, {4 * elements} B): kept in memory on {target}, larger than" in str(kept)


def test_register_files_of_the_targets():
    assert [RegisterBudget.of(ts.Target(t)).bytes for t in TARGETS] == [32 * 64, 16 * 32, 16 * 16, 16 * 8]


def _register_tile(rows: int, columns: int):
    """A GEMM whose ``rows x columns`` tile of C is accumulated in a local buffer, its columns vectorized."""
    n = 64
    A, B = ts.placeholder((n, n), name="A"), ts.placeholder((n, n), name="B")
    k = ts.reduce_axis((0, n), name="k")
    C = ts.compute((n, n), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = ts.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    _, jo, _, ji = s[C].tile(*C.op.axis, rows, columns)
    s[CC].compute_at(s[C], jo)
    ci, cj = s[CC].op.axis
    s[CC].reorder(s[CC].op.reduce_axis[0], ci, cj)
    s[CC].unroll(ci)
    s[CC].vectorize(cj)
    s[C].vectorize(ji)
    return s, [A, B, C]


@pytest.mark.parametrize("target", ["x86-64-avx512", "x86-64-avx2", "x86-64"])
def test_lower_reports_the_tiles_promoted_and_kept_in_memory(target):
    """A tile of as many vectors as the target has registers is promoted; one of twice as many stays an
    array; the text of ``lower()`` says which, with their sizes."""
    budget = RegisterBudget.of(ts.Target(target))
    lanes = budget.register_bytes // 4
    with ts.Target(target):
        fits = ts.lower(*_register_tile(budget.registers // 2, 2 * lanes))
        text = str(fits)
        over = str(ts.lower(*_register_tile(budget.registers // 2, 4 * lanes)))
    size = budget.registers * lanes
    assert (f"# C.local ({size} x float32, {4 * size} B): promoted to registers on {target} "
            f"({budget.registers} of its {budget})") in text
    assert (f"# C.local ({2 * size} x float32, {8 * size} B): kept in memory on {target}, larger than its "
            f"register file") in over
    finished = lower_for_target(fits, ts.Target(target))
    assert [p.buffer for p in finished.promotions] == ["C.local"]
    assert any(isinstance(s, ir.Registers) for s in walk_stmts(finished.body))


def _conv_with_pad_at_tile(channels: int = 8, size: int = 16):
    """A 16x16 3x3 convolution and ReLU per tile of 4 x 8 outputs, its zero-padded input computed per tile:
    all the pad tile's loops are short enough to unroll, its 8 x 6 x 10 = 480 elements each a constant
    offset."""
    data = ts.placeholder((1, channels, size, size), name="data")
    weight = ts.placeholder((channels, channels, 3, 3), name="weight")
    pad = ts.compute((1, channels, size + 2, size + 2),
                     lambda n, c, y, x: ts.if_then_else(ts.all(y >= 1, y <= size, x >= 1, x <= size),
                                                        data[n, c, y - 1, x - 1], 0.0), name="pad")
    rc, ry, rx = ts.reduce_axis((0, channels), name="rc"), ts.reduce_axis((0, 3), name="ry"), ts.reduce_axis((0, 3), name="rx")
    conv = ts.compute((1, channels, size, size),
                      lambda n, f, y, x: ts.sum(pad[n, rc, y + ry, x + rx] * weight[f, rc, ry, rx], axis=[rc, ry, rx]),
                      name="conv")
    relu = ts.compute(conv.shape, lambda n, f, y, x: ts.maximum(conv[n, f, y, x], 0.0), name="relu")
    s = ts.create_schedule(relu.op)
    n, f, y, x = s[relu].op.axis
    yo, yi = s[relu].split(y, factor=4)
    xo, xi = s[relu].split(x, factor=8)
    s[relu].reorder(n, yo, xo, f, yi, xi)
    s[relu].vectorize(xi)
    s[conv].compute_at(s[relu], xo)
    s[pad].compute_at(s[relu], xo)
    return s, [data, weight, relu]


@pytest.mark.parametrize("target", TARGETS)
def test_padded_tile_of_a_fused_convolution_stays_an_array(target):
    """480 elements at constant offsets after unrolling, more than any register file: an array (it was 480
    scalar variables, thousands of lines of C), reported by ``lower()``."""
    with ts.Target(target):
        lowered = ts.lower(*_conv_with_pad_at_tile())
        text = str(lowered)
    assert f"# pad (480 x float32, 1920 B): kept in memory on {target}" in text
    finished = lower_for_target(lowered, ts.Target(target))
    assert not any(v.name.startswith("pad.") for s in walk_stmts(finished.body) if isinstance(s, ir.Registers)
                   for v in s.variables)
    assert any(isinstance(s, ir.Allocate) and s.buffer.name == "pad" for s in walk_stmts(finished.body))


def test_fused_convolution_with_its_padded_tile_in_memory_matches_numpy(rand):
    kernel = ts.build(*_conv_with_pad_at_tile(), name="conv_pad_tile")
    assert "float pad[480]" in kernel.c_source, kernel.c_source
    x, w = rand((1, 8, 16, 16), low=-1), rand((8, 8, 3, 3), low=-1)
    want = np.maximum(conv2d_reference(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), w, 1, 0, 1, 1), 0)
    np.testing.assert_allclose(kernel(x, w), want, rtol=1e-4, atol=1e-4)
