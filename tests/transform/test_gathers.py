"""Vector gathers: reads at computed indices inside vectorized loops, against NumPy, and where the loop
stays scalar instead."""
import numpy as np
import pytest

import tesched as ts
from tesched.arith.interval import VarRanges
from tesched.ir import nodes as ir
from tesched.te.expr import Var
from tesched.transform.gathers import gather_offset
from targets import AVX512, pinned

pytestmark = pytest.mark.usefixtures("host_target")


def _lut(dtype: str, n: int = 100, name: str = "gather_lut"):
    """``out[i] = lut[clamp(int32(x[i] * 10), 0, 15)] * 2``: a table read at a clamped float index."""
    x = ts.placeholder((n,), name="x")
    lut = ts.placeholder((16,), dtype=dtype, name="lut")
    out = ts.compute((n,), lambda i: lut[ts.clamp(ts.cast("int32", x[i] * 10.0), 0, 15)] * ts.const(2, dtype),
                     name="out")
    s = ts.create_schedule(out.op)
    s[out].vectorize(out.op.axis[0])
    return pinned(lambda: ts.build(s, [x, lut, out], name=f"{name}_{dtype}"))


@pytest.mark.parametrize("dtype,lanes", [("float32", 16), ("int32", 16), ("float64", 8), ("int64", 8)])
def test_a_table_read_at_a_computed_index_is_gathered(dtype, lanes, rand):
    code, run = _lut(dtype)
    assert f"ts_vgather_{dtype[0]}{dtype[-2:]}x{lanes}" in code.c_source
    assert "#pragma omp simd" not in code.c_source
    x = rand((100,)) * np.float32(2.0) - np.float32(0.5)
    table = (np.arange(16) * 3 + 1).astype(dtype)
    idx = np.clip((x * np.float32(10.0)).astype(np.int32), 0, 15)
    np.testing.assert_array_equal(run(x, table), table[idx] * 2)


def test_a_gather_from_a_local_buffer_stays_in_memory(rand):
    """A producer computed per row and read through ``x // 2`` at a data-dependent row: the buffer is not
    promoted to registers, and the values are right."""
    img = ts.placeholder((8, 64), name="img")
    sel = ts.placeholder((8, 64), dtype="int32", name="sel")
    half = ts.compute((8, 3, 32), lambda y, k, x: img[y, 2 * x] * ts.cast("float32", k + 1), name="half")
    out = ts.compute((8, 64), lambda y, x: half[y, ts.clamp(sel[y, x], 0, 2), x // 2], name="out")
    s = ts.create_schedule(out.op)
    s[half].compute_at(s[out], out.op.axis[0])
    s[out].vectorize(out.op.axis[1])
    code, run = pinned(lambda: ts.build(s, [img, sel, out], name="gather_local"))
    assert "ts_vgather_f32x16(half" in code.c_source
    a = rand((8, 64))
    k = np.random.default_rng(1).integers(-1, 4, (8, 64)).astype(np.int32)
    want = a[:, ::2][:, np.arange(64) // 2] * (np.clip(k, 0, 2) + 1)
    np.testing.assert_allclose(run(a, k), want, rtol=1e-6)


def test_an_index_checked_at_run_time_keeps_the_loop_scalar(rand):
    """Each lane would check its own index: the loop is left to gcc, and a bad index still raises."""
    a = ts.placeholder((16,), name="a")
    idx = ts.placeholder((32,), dtype="int32", name="idx")
    out = ts.compute((32,), lambda i: a[idx[i]] + 1.0, name="out")
    s = ts.create_schedule(out.op)
    s[out].vectorize(out.op.axis[0])
    code, run = pinned(lambda: ts.build(s, [a, idx, out], name="gather_checked"))
    assert "ts_vgather" not in code.c_source
    values = rand((16,))
    good = np.random.default_rng(2).integers(0, 16, 32).astype(np.int32)
    np.testing.assert_allclose(run(values, good), values[good] + 1.0)
    with pytest.raises(ts.BoundsError):
        run(values, np.full(32, 16, np.int32))


def test_offsets_that_may_not_fit_in_int32_are_not_gathered():
    big = ir.Buffer("big", (2 ** 16, 2 ** 16), "float32", ir.BufferScope.ARG)
    small = ir.Buffer("small", (64, 64), "float32", ir.BufferScope.ARG)
    i, j = Var("i", "int64"), Var("j", "int64")
    ranges = VarRanges().where(i, 0, 63).where(j, 0, 63)
    assert gather_offset(ir.Load(big, (i, j)), ir.flat_index(big, (i, j)), 16, ranges) is None
    load = ir.Load(small, (i, j * j % 64))
    offset = gather_offset(load, ir.flat_index(small, load.indices), 16, ranges)
    assert offset is not None and offset.dtype == "int32"
    assert gather_offset(load, ir.flat_index(small, load.indices), 2, ranges) is None   # no int32 x 2 index
