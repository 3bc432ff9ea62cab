"""Tests of tesched.transform.registers: small local buffers promoted to variables: the partial results
of ``rfactor`` lanes (a vector written lane-wise, then read element by element), against NumPy, and masked
vector reads (padding inside a vectorized loop)."""
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
from tesched.transform.registers import promote
from targets import pinned

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
