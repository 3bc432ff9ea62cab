"""tesched.nn.quantized_schedule: which micro-kernel the default schedule of dense_packed picks (AMX where the
target and the OS allow it, the dot-product tiles otherwise) and that every choice computes what NumPy does,
with tails (sizes that are not multiples of 16 or 32), a fused requantize epilogue, and the fallbacks."""
import numpy as np
import pytest

import tesched as ts
from tesched import nn
from tesched.intrin import amx
from tesched.nn import quantized_ref as ref
from tesched.nn.quantized import GROUPS
from tesched.nn.quantized_schedule import amx_panel_columns

from amx_helpers import DTYPES, check, operands, skip_without_amx

NO_AMX = "x86-64-avx512+avx512_vnni+avx512_bf16"
"""A target with AVX-512 VNNI and BF16 but no AMX: the dot-product schedule."""


def dense(m: int, n: int, k: int, data_dtype: str, weight_dtype: str, target: str | None = None):
    """dense_packed built with its default schedule for ``target``; the kernel and whether it calls AMX."""
    group = GROUPS[data_dtype]
    x_t = ts.placeholder((m, k), data_dtype, name="x")
    w_t = ts.placeholder((k // group, n, group), weight_dtype, name="w")
    out = nn.dense_packed(x_t, w_t)
    with ts.Target(target or "host"):
        kernel = ts.build(nn.default_schedule(out), [x_t, w_t, out], name="dense_packed")
    return kernel, "tesched_amx_" in kernel.c_source


@pytest.mark.parametrize("data_dtype, weight_dtype", DTYPES)
@pytest.mark.parametrize("m, n, k", [(64, 96, 256), (50, 40, 100), (4, 24, 12), (33, 80, 200), (40, 256, 72)])
def test_host_with_amx_uses_it(data_dtype, weight_dtype, m, n, k, rng):
    skip_without_amx(data_dtype)
    kernel, uses_amx = dense(m, n, k, data_dtype, weight_dtype)
    assert uses_amx
    x, w = operands(rng, m, n, k, data_dtype, weight_dtype)
    check(kernel(x, nn.pack_dense_weight(w)), x, w)


def test_amx_panels_hold_several_tiles_and_leave_panels_for_the_threads():
    assert amx_panel_columns(1024, 32, 2048) == 256            # bfloat16, K = 1024: 512 KiB of weights
    assert amx_panel_columns(1024, 32, 64) == 256              # room for more, but 4 panels are kept
    assert amx_panel_columns(256, 32, 72) == 64 and amx_panel_columns(96, 32, 64) == 32
    assert amx_panel_columns(40, 20, 10 ** 7) == 20            # over the budget: one tile per panel


@pytest.mark.parametrize("data_dtype, weight_dtype", DTYPES)
def test_without_amx_the_dot_product_tiles_run(data_dtype, weight_dtype, rng):
    if "avx512f" not in ts.Target("host").features:
        pytest.skip("this CPU cannot run AVX-512 code")
    kernel, uses_amx = dense(48, 40, 100, data_dtype, weight_dtype, NO_AMX)
    assert not uses_amx
    x, w = operands(rng, 48, 40, 100, data_dtype, weight_dtype)
    check(kernel(x, nn.pack_dense_weight(w)), x, w)


def test_the_os_refusing_amx_falls_back_silently(monkeypatch, rng):
    monkeypatch.setattr(amx, "os_permits_amx", lambda: False)
    kernel, uses_amx = dense(32, 32, 64, "uint8", "int8")
    assert not uses_amx
    x, w = operands(rng, 32, 32, 64, "uint8", "int8")
    check(kernel(x, nn.pack_dense_weight(w)), x, w)


def test_sizes_without_a_wide_dividing_tile_keep_the_dot_product_tiles(rng):
    skip_without_amx("uint8")
    kernel, uses_amx = dense(37, 32, 64, "uint8", "int8")           # 37 rows: prime, only 1-row tiles
    assert not uses_amx
    x, w = operands(rng, 37, 32, 64, "uint8", "int8")
    check(kernel(x, nn.pack_dense_weight(w)), x, w)


def test_an_operand_computed_inline_keeps_the_dot_product_tiles(rng):
    """A quantize fused into the product is no stored array the AMX tiles could load."""
    xf_t = ts.placeholder((64, 128), name="xf")
    w_t = ts.placeholder((32, 64, 4), "int8", name="w")
    out = nn.dense_packed(nn.quantize(xf_t, 0.05, 128, "uint8"), w_t)
    kernel = ts.build(nn.default_schedule(out), [xf_t, w_t, out], name="quantize_dense")
    assert "tesched_amx_" not in kernel.c_source
    xf = rng.uniform(-3, 3, (64, 128)).astype(np.float32)
    w = rng.integers(-128, 128, (64, 128)).astype(np.int8)
    expected = ref.dense(ref.quantize(xf, 0.05, 128, "uint8"), w)
    np.testing.assert_array_equal(kernel(xf, nn.pack_dense_weight(w)), expected)


@pytest.mark.parametrize("target", ["host", NO_AMX])
def test_qdense_fuses_its_epilogue_with_either_kernel(target, rng):
    if target == "host":
        skip_without_amx("uint8")
    elif "avx512f" not in ts.Target("host").features:
        pytest.skip("this CPU cannot run AVX-512 code")
    m, n, k = 40, 48, 96
    x, w = operands(rng, m, n, k, "uint8", "int8")
    packed, offset, multiplier = nn.quantized_dense_params(w, rng.uniform(0.001, 0.01, n), rng.standard_normal(n),
                                                           0.02, 128, 0.5)
    x_t, w_t = ts.placeholder(x.shape, "uint8", name="x"), ts.placeholder(packed.shape, "int8", name="w")
    o_t, m_t = ts.placeholder((n,), "int32", name="offset"), ts.placeholder((n,), name="multiplier")
    out_t = nn.qdense(x_t, w_t, o_t, m_t, 3, "uint8", relu=True)
    with ts.Target(target):
        kernel = ts.build(nn.default_schedule(out_t), [x_t, w_t, o_t, m_t, out_t], name="qdense")
    assert ("tesched_amx_" in kernel.c_source) == (target == "host")
    expected = ref.requantize(ref.dense(x, w), multiplier, 3, "uint8", offset, relu=True)
    np.testing.assert_array_equal(kernel(x, packed, offset, multiplier), expected)
