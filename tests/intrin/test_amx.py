"""tesched.intrin.amx: the AMX micro-kernel tensorized by hand over dense_packed (whole and partial tiles,
reduction tails), its argument checks, and when a target runs it. Every kernel is checked against NumPy."""
import pytest

import tesched as ts
from tesched import nn
from tesched.intrin import amx
from tesched.intrin.amx import amx_dense_microkernel, amx_feature, amx_usable

from amx_helpers import DTYPES, check, operands, skip_without_amx


def tensorized(m: int, n: int, k: int, data_dtype: str, weight_dtype: str, tile: tuple[int, int]):
    """dense_packed of (m, k) data, tiled by ``tile`` and tensorized with the AMX micro-kernel."""
    group = nn.quantized.GROUPS[data_dtype]
    x_t = ts.placeholder((m, k), data_dtype, name="x")
    w_t = ts.placeholder((k // group, n, group), weight_dtype, name="w")
    out = nn.dense_packed(x_t, w_t)
    s = ts.create_schedule(out.op)
    _, _, ii, _ = s[out].tile(*s[out].op.axis, *tile)
    s[out].tensorize(ii, amx_dense_microkernel(*tile, k, data_dtype, weight_dtype))
    return s, [x_t, w_t, out]


@pytest.mark.parametrize("data_dtype, weight_dtype", DTYPES)
@pytest.mark.parametrize("m, n, k, tile", [
    (64, 64, 128, (32, 32)),      # whole tiles, whole reduction steps
    (48, 40, 100, (24, 20)),      # tiles of 16 + 8 rows and 16 + 4 columns; a reduction tail (zero-padded)
    (50, 40, 36, (32, 32)),       # partial tiles: tesched's plain loops; k shorter than one step
    (16, 16, 8, (16, 16)),        # one tile of each
])
def test_tensorized_product_matches_numpy(data_dtype, weight_dtype, m, n, k, tile, rng):
    skip_without_amx(data_dtype)
    s, args = tensorized(m, n, k, data_dtype, weight_dtype, tile)
    assert f"call tesched_amx_{data_dtype}_{weight_dtype}_{tile[0]}x{tile[1]}x{k}_body(" in str(ts.lower(s, args))
    x, w = operands(rng, m, n, k, data_dtype, weight_dtype)
    check(ts.build(s, args)(x, nn.pack_dense_weight(w)), x, w)


@pytest.mark.parametrize("data_dtype, weight_dtype", [("bfloat16", "bfloat16"), ("uint8", "int8")])
def test_a_named_amx_target_runs_anywhere(data_dtype, weight_dtype, rng):
    """x86-64 (SSE4.2) + AMX: the kernel asks the OS when it loads and, refused or on a CPU without AMX,
    runs its scalar form; either way the result is right and nothing traps."""
    feature = amx_feature(data_dtype, weight_dtype)
    target = ts.Target(f"x86-64+{feature}")
    assert amx_usable(data_dtype, weight_dtype, target) and target.has("amx_tile")
    s, args = tensorized(32, 48, 72, data_dtype, weight_dtype, (16, 24))
    x, w = operands(rng, 32, 48, 72, data_dtype, weight_dtype)
    check(ts.build(s, args, target=target)(x, nn.pack_dense_weight(w)), x, w)


def test_usable_only_with_the_features_and_the_os(monkeypatch):
    assert not amx_usable("bfloat16", "bfloat16", "x86-64-avx512+avx512_bf16")
    assert not amx_usable("bfloat16", "bfloat16", "x86-64-avx512+amx_int8")     # int8 only
    assert amx_usable("uint8", "int8", "x86-64-avx512+amx_int8")
    assert not amx_usable("float32", "float32", "x86-64-avx512+amx_bf16") and amx_feature("uint8", "uint8") is None
    monkeypatch.setattr(amx, "os_permits_amx", lambda: False)
    assert not amx_usable("uint8", "int8", "host")                 # the host target asks the OS
    assert amx_usable("uint8", "int8", "x86-64-avx512+amx_int8")   # a named target is taken at its word


def test_os_permission_is_asked_once():
    assert amx.os_permits_amx() is amx.os_permits_amx()
    assert amx.os_permits_amx.cache_info().currsize == 1


@pytest.mark.parametrize("args, error, message", [
    ((33, 16, 64), ValueError, "mr must be a positive int at most 32"),
    ((16, 0, 64), ValueError, "nr must be a positive int"),
    ((16, 16, 30, "uint8"), ValueError, "k=30 must be a multiple of the packing group 4"),
    ((16, 16, 32, "float32"), TypeError, "no AMX product of float32 data"),
    ((16, 16, 32, "uint8", "uint8"), TypeError, "uint8 weights"),
])
def test_bad_micro_kernels_are_refused(args, error, message):
    with pytest.raises(error, match=message):
        amx_dense_microkernel(*args)


def test_same_arguments_give_the_same_intrinsic():
    assert amx_dense_microkernel(16, 16, 64, "uint8") is amx_dense_microkernel(16, 16, 64, "uint8", "int8")
    assert amx_dense_microkernel(16, 16, 64, "uint8") is not amx_dense_microkernel(16, 16, 64, "int8")


def test_other_expressions_are_not_matched():
    x_t = ts.placeholder((32, 64), "bfloat16", name="x")
    w_t = ts.placeholder((32, 32, 2), "bfloat16", name="w")
    k = ts.reduce_axis((0, 32), "k")
    t = ts.reduce_axis((0, 2), "t")
    out = ts.compute((32, 32), lambda i, j: ts.sum(x_t[i, 2 * k + t].astype("float32") *
                                                   w_t[k, j, t].astype("float32") + 1.0, axis=[k, t]), name="out")
    s = ts.create_schedule(out.op)
    s[out].tensorize(s[out].op.axis[0], amx_dense_microkernel(32, 32, 64))
    with pytest.raises(ts.TensorizeError, match="differs"):
        ts.lower(s, [x_t, w_t, out])
