"""dense by a weight packed in column panels (N / B, K, B), against NumPy: the packing, the GEMM and the
matrix-vector schedules (with an epilogue, alone, stored whole beside another output), and the errors."""
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tesched as ts
import tesched.nn as nn
from tesched.nn.dense_panels import panel_width

from targets import AVX512, pinned, runs_here

from .helpers import ATOL, RTOL, run


def check_panels(x, w, block=None, bias=None):
    """``relu(x @ w.T + bias)`` (or ``x @ w.T`` without a bias) through ``dense_panels`` on the packed ``w``."""
    packed = nn.pack_dense_panels(w, block)
    xt, pt = ts.placeholder(x.shape, name="x"), ts.placeholder(packed.shape, name="p")
    product = nn.dense_panels(xt, pt)
    if bias is None:
        out, kernel = run(product, [xt, pt], [x, packed], name="dense_panels")
        want = x.astype(np.float64) @ w.T.astype(np.float64)
    else:
        bt = ts.placeholder(bias.shape, name="b")
        out, kernel = run(nn.relu(nn.bias_add(product, bt, axis=1)), [xt, pt, bt], [x, packed, bias],
                          name="dense_panels_bias_relu")
        want = np.maximum(x.astype(np.float64) @ w.T.astype(np.float64) + bias, 0)
    np.testing.assert_allclose(out, want, rtol=RTOL, atol=ATOL * np.sqrt(x.shape[1]))
    return kernel


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(rows=st.integers(1, 2), panels=st.integers(1, 3), block=st.sampled_from([1, 3, 16, 32]),
       reduced=st.integers(1, 40))
def test_random_shapes_pack_and_unpack(rows, panels, block, reduced, rand):
    """Packing is a permutation: every weight element lands at ``[j // B, k, j % B]`` and comes back."""
    w = rand((panels * block, reduced), low=-1)
    packed = nn.pack_dense_panels(w, block)
    assert packed.shape == (panels, reduced, block) and packed.flags.c_contiguous
    j, k = panels * block - 1, reduced - 1
    assert packed[j // block, k, j % block] == w[j, k]
    np.testing.assert_array_equal(nn.unpack_dense_panels(packed), w)
    assert nn.pack_dense_panels(w).shape[2] == panel_width(panels * block)


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(rows=st.sampled_from([1, 2, 3, 4, 8, 12, 11, 22, 37]), panels=st.integers(1, 5),
       block=st.sampled_from([4, 16, 32]), reduced=st.integers(1, 37), bias=st.booleans())
def test_random_shapes_match_numpy(rows, panels, block, reduced, bias, rand):
    """GEMM tiles (rows with a divisor of 4 to 8, or none: 11, 22 and 37 rows leave a partial last tile) and
    matrix-vector tiles (1, 2, 3 rows), any panel count (tiles of several panels or one), reduced sizes not
    divisible by the unroll factor."""
    x, w = rand((rows, reduced), low=-1), rand((panels * block, reduced), low=-1)
    check_panels(x, w, block, rand((panels * block,), low=-1) if bias else None)


@pytest.mark.parametrize("target, accumulators", [(AVX512, 8), ("x86-64-avx2", 8)])
def test_matrix_vector_tiles_keep_accumulators_in_registers_and_read_panels_in_place(target, accumulators, rand):
    """Panels of 32 columns: 4 of 2 AVX-512 vectors, or 2 of 4 AVX2 vectors (4 would take 16 accumulators
    and the broadcast 17 of AVX2's 16 registers)."""
    if not runs_here(target):
        pytest.skip(f"this CPU cannot run code built for {target}")
    with ts.Target(target):
        kernel = check_panels(rand((1, 64), low=-1), rand((256, 64), low=-1), 32)
    source = kernel.c_source
    last = accumulators - 1
    assert f"dense_panels_local_r{last}" in source and f"dense_panels_local_r{last + 1}" not in source
    assert "% 32" not in source and "/ 32" not in source                                   # no index arithmetic


def test_a_prime_row_count_keeps_the_register_tile_on_its_full_tiles(rand):
    """197 rows (ViT's tokens), no divisor from 4 to 8: 24 full tiles of 8 rows x 2 AVX-512 vectors (16
    accumulator registers, every loop unrolled) and a last tile of 5 rows, not matrix-vector products."""
    x, w, bias = rand((197, 24), low=-1), rand((64, 24), low=-1), rand((64,), low=-1)
    packed = nn.pack_dense_panels(w, 32)
    xt, pt, bt = ts.placeholder(x.shape, name="x"), ts.placeholder(packed.shape, name="p"), ts.placeholder((64,), name="b")
    out = nn.relu(nn.bias_add(nn.dense_panels(xt, pt), bt, axis=1))
    kernel, here = pinned(lambda: ts.build(nn.default_schedule([out]), [xt, pt, bt, out], name="dense_panels_197"))
    source = kernel.c_source
    assert re.search(r"for \(int64_t \w+ = 0; \w+ < 24; ", source)                 # the full tiles
    assert re.search(r"dense_panels\w*_r15;", source) and not re.search(r"dense_panels\w*_r16;", source)
    assert "ts_min" not in source and "#pragma GCC unroll" not in source
    want = np.maximum(x.astype(np.float64) @ w.T.astype(np.float64) + bias, 0)
    np.testing.assert_allclose(here(x, packed, bias), want, rtol=RTOL, atol=ATOL * np.sqrt(24))


def test_gemm_tiles_read_the_panels_without_a_copy(rand):
    kernel = check_panels(rand((16, 24), low=-1), rand((64, 24), low=-1), 32, bias=rand((64,), low=-1))
    lowered = str(kernel.lowered)
    assert "p_local" not in lowered and "p.local" not in lowered
    assert "relu" in lowered


def test_the_product_stored_whole_next_to_another_output(rand):
    """A product read by two outputs is stored whole (``cache_write``) and still reads the panels."""
    x, w = rand((1, 20), low=-1), rand((32, 20), low=-1)
    packed = nn.pack_dense_panels(w, 16)
    xt, pt = ts.placeholder(x.shape, name="x"), ts.placeholder(packed.shape, name="p")
    product = nn.dense_panels(xt, pt)
    (got, doubled), _ = run([product, nn.add(product, product)], [xt, pt], [x, packed], name="dense_panels_two")
    want = x.astype(np.float64) @ w.T.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(doubled, 2 * want, rtol=RTOL, atol=ATOL)


def test_bad_shapes_dtypes_and_blocks_are_named():
    x, p = ts.placeholder((2, 5), name="x"), ts.placeholder((2, 4, 8), name="p")
    with pytest.raises(ValueError, match=r"disagree on the reduced axis \(5 vs 4\)"):
        nn.dense_panels(x, p)
    with pytest.raises(ValueError, match="x must be 2-D"):
        nn.dense_panels(ts.placeholder((2, 5, 1), name="x3"), p)
    with pytest.raises(TypeError, match="dtypes float64 and float32 differ"):
        nn.dense_panels(ts.placeholder((2, 4), dtype="float64", name="x"), p)
    w = np.zeros((12, 3), np.float32)
    with pytest.raises(ValueError, match="panel width 5 must be a positive divisor of the weight's 12"):
        nn.pack_dense_panels(w, 5)
    with pytest.raises(ValueError, match="panel width 0"):
        nn.pack_dense_panels(w, 0)
    with pytest.raises(ValueError, match=r"weight must be 2-D \(N, K\)"):
        nn.pack_dense_panels(np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="packed weights must be 3-D"):
        nn.unpack_dense_panels(w)
