"""The GEMM micro-kernel intrinsics (tesched.intrin.gemm and the C of gemm_source) tensorized by hand on
every path the host can run: body, reset/update, strided operands (scalar path), fused bias + relu, and
what the matcher refuses. Every kernel is checked against NumPy."""
import numpy as np
import pytest

import tesched as ts
from tesched.intrin import gemm_bias_relu_microkernel, gemm_microkernel

from .helpers import HOST_ISAS, SIMD_ISAS, bias_relu, centered, matmul, tolerance


@pytest.mark.parametrize("isa", SIMD_ISAS)
def test_tile_columns_must_fill_whole_vectors(isa):
    with pytest.raises(ValueError, match="multiple of"):
        gemm_microkernel(4, 12, 8, isa=isa)


def test_bad_micro_tiles_are_refused():
    with pytest.raises(ValueError, match="positive"):
        gemm_microkernel(0, 16, 8)
    with pytest.raises(ValueError, match="positive"):
        gemm_microkernel(4, 16, 2.5)
    with pytest.raises(TypeError, match="dtype"):
        gemm_microkernel(4, 16, 8, dtype="int32")


def test_same_arguments_give_the_same_intrinsic():
    assert gemm_microkernel(4, 16, 8) is gemm_microkernel(4, 16, 8)
    assert gemm_microkernel(4, 16, 8) is not gemm_microkernel(4, 16, 16)


@pytest.mark.parametrize("isa", HOST_ISAS)
def test_body_covers_the_whole_reduction(isa, rand):
    a, b, c = matmul(8, 32, 16)
    s = ts.create_schedule(c.op)
    io, jo, ii, ji = s[c].tile(*c.op.axis, 4, 16)
    s[c].tensorize(ii, gemm_microkernel(4, 16, 16, isa=isa))
    text = str(ts.lower(s, [a, b, c]))
    assert text.count(f"call tesched_gemm_{isa}_float32_4x16x16_body(") == 1 and "reset" not in text
    x, y = centered(rand, (8, 16)), centered(rand, (16, 32))
    np.testing.assert_allclose(ts.build(s, [a, b, c])(x, y), x @ y, **tolerance("float32"))


@pytest.mark.parametrize("isa", HOST_ISAS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_reset_then_update_per_reduction_slice(isa, dtype, rand):
    a, b, c = matmul(8, 32, 24, dtype)
    s = ts.create_schedule(c.op)
    io, jo, ii, ji = s[c].tile(*c.op.axis, 8, 16)
    ko, ki = s[c].split(c.op.reduce_axis[0], factor=8)
    s[c].reorder(io, jo, ko, ii, ji, ki)
    s[c].tensorize(ii, gemm_microkernel(8, 16, 8, dtype, isa=isa))
    text = str(ts.lower(s, [a, b, c]))
    assert "_reset(&C[" in text and "_update(&A[" in text and "_body(" not in text
    x, y = centered(rand, (8, 24), dtype), centered(rand, (24, 32), dtype)
    np.testing.assert_allclose(ts.build(s, [a, b, c])(x, y), x @ y, **tolerance(dtype))


@pytest.mark.parametrize("isa", SIMD_ISAS)
def test_strided_rows_of_b_take_the_scalar_path(isa, rand):
    """B is read at every other element (stride 2 along the tile's columns): still exact."""
    a, b, c = matmul(4, 16, 8, b_shape=(8, 16, 2), b_read=lambda b, r, j: b[r, j, 1])
    s = ts.create_schedule(c.op)
    s[c].tensorize(c.op.axis[0], gemm_microkernel(4, 16, 8, isa=isa))
    assert "&B[0, 0, 1], 32, 2," in str(ts.lower(s, [a, b, c]))
    x, y = centered(rand, (4, 8)), centered(rand, (8, 16, 2))
    np.testing.assert_allclose(ts.build(s, [a, b, c])(x, y), x @ y[:, :, 1], **tolerance("float32"))


@pytest.mark.parametrize("isa", HOST_ISAS)
def test_fused_bias_relu_is_one_call(isa, rand):
    a, b, c = matmul(8, 32, 16)
    bias, out = bias_relu(c)
    s = ts.create_schedule(out.op)
    io, jo, ii, ji = s[out].tile(*out.op.axis, 4, 16)
    s[c].compute_at(s[out], jo)
    s[out].tensorize(ii, gemm_bias_relu_microkernel(4, 16, 16, isa=isa))
    text = str(ts.lower(s, [a, b, bias, out]))
    assert text.count("call tesched_gemm_bias_relu_") == 1 and "produce C" not in text
    x, y, z = centered(rand, (8, 16)), centered(rand, (16, 32)), centered(rand, (32,))
    expected = np.maximum(x @ y + z, 0)
    np.testing.assert_allclose(ts.build(s, [a, b, bias, out])(x, y, z), expected, **tolerance("float32"))


def test_fused_intrinsic_refuses_a_split_reduction():
    a, b, c = matmul(8, 32, 16)
    bias, out = bias_relu(c)
    s = ts.create_schedule(out.op)
    io, jo, ii, ji = s[out].tile(*out.op.axis, 4, 16)
    s[c].compute_at(s[out], jo)
    s[c].split(c.op.reduce_axis[0], factor=8)
    s[out].tensorize(ii, gemm_bias_relu_microkernel(4, 16, 8))
    with pytest.raises(ts.TensorizeError):
        ts.lower(s, [a, b, bias, out])


def test_partial_tiles_run_the_plain_loops(rand):
    a, b, c = matmul(6, 32, 16)
    s = ts.create_schedule(c.op)
    io, jo, ii, ji = s[c].tile(*c.op.axis, 4, 16)
    s[c].tensorize(ii, gemm_microkernel(4, 16, 16))
    kernel = ts.build(s, [a, b, c])
    assert "call tesched_gemm_" in str(kernel.lowered)
    x, y = centered(rand, (6, 16)), centered(rand, (16, 32))
    np.testing.assert_allclose(kernel(x, y), x.astype(np.float64) @ y, rtol=1e-4, atol=1e-4)
