"""tesched.tiling: register tiles sized by the target's register file (AVX-512: 32 zmm, AVX2: 16 ymm,
portable C: scalars, lanes 1), the tilers of the operator library that use it, and kernels built with
those tiles for each target, compared with NumPy."""
import re
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tesched as ts
import tesched.nn as nn
from tesched.nn.conv import pointwise_tile
from tesched.nn import winograd
from tesched.nn.conv_channels import conv2d_weight_last, register_tile, weight_last
from tesched.driver.compiler import RUNTIME_DIR
from tesched.nn.dense import MIN_TILE_ROWS, matmul_tile, register_tiles, row_options
from tesched.nn.dense_panels import GEMM_ROWS
from tesched.nn.winograd import product_tile
from tesched.tiling import (
    PORTABLE_REGISTERS,
    RegisterFile,
    accumulator_tile,
    fits,
    loads_per_step,
    registers_needed,
    useful_fmas_per_cycle,
    vector_chunks,
)

from targets import AVX512, pinned

AVX2 = "x86-64-avx2"
FILES = {AVX512: RegisterFile(32, 16, True), AVX2: RegisterFile(16, 8, False),
         "x86-64": RegisterFile(16, 4, False), "c": RegisterFile(PORTABLE_REGISTERS, 1, False)}


@pytest.mark.parametrize("target, expected", FILES.items())
def test_register_file_of_each_target(target, expected):
    assert RegisterFile.of(ts.Target(target)) == expected
    assert ts.Target(target).vector_registers == {AVX512: 32, AVX2: 16, "x86-64": 16, "c": 0}[target]


def test_registers_needed_counts_accumulators_kept_vectors_and_the_broadcast():
    """As gcc 12 compiles the tiles (see test_the_model_matches_the_assembly_gcc_emits)."""
    avx2, avx512 = FILES[AVX2], FILES[AVX512]
    assert registers_needed(4, 2, avx2) == 8 + 2 + 1          # vectors kept: read by 3+ rows
    assert registers_needed(6, 2, avx2) == 12 + 2 + 1 and fits(6, 2, avx2) and not fits(7, 2, avx2)
    assert registers_needed(2, 7, avx2) == 14 + 1             # 2 rows: each vector reloaded per row
    assert registers_needed(1, 8, avx2) == 8 + 1
    assert registers_needed(8, 1, avx512) == 8 + 1            # one vector: the broadcast is embedded
    assert registers_needed(3, 4, avx512) == 12 + 1           # 3 rows of 32 registers: reloaded
    assert registers_needed(7, 4, avx512) == 28 + 4 + 1       # 33: spills
    assert not fits(8, 2, avx2) and fits(8, 2, avx512) and not fits(7, 4, avx512)
    assert registers_needed(7, 4, avx512, shared=False) == 28 + 1   # rows of their own (depthwise): none kept
    assert vector_chunks(28, 8) == 4 and FILES["c"].vectors(28) == 1


def test_loads_count_reloads_of_folded_vectors():
    avx2, avx512 = FILES[AVX2], FILES[AVX512]
    assert loads_per_step(2, 7, avx512) == 2 + 14 and loads_per_step(8, 1, avx512) == 8 + 1
    assert loads_per_step(6, 2, avx2) == 6 + 2 and loads_per_step(2, 2, avx2) == 2 + 4


def test_a_wide_band_of_two_rows_streams_its_columns_from_l2():
    """The 1x1 convolution's old AVX-512 tile, 2 channels x 112 positions, reads 7 new lines for 14
    multiply-adds: L2-bound at half the rate of 8 channels x 16 positions."""
    avx512 = FILES[AVX512]
    assert useful_fmas_per_cycle(2, 112, avx512) == pytest.approx(1.0)
    assert useful_fmas_per_cycle(8, 16, avx512) == pytest.approx(8 / 4.5)
    assert accumulator_tile([1, 2, 4, 8], [16, 112], avx512) == (8, 16)


def test_a_partial_last_tile_is_weighed_over_the_extent():
    """1024 rows on AVX2: 170 tiles of 6 and one of 4 keep both FMA ports busy as tiles of 4 do, with fewer
    loads per element; 12 columns' worth of rows of 7 would spill."""
    avx2 = FILES[AVX2]
    assert accumulator_tile([1, 2, 4, 5, 6, 7, 8], [16], avx2, extent=1024) == (6, 16)
    assert useful_fmas_per_cycle(6, 16, avx2, extent=1024) == pytest.approx(2.0)
    assert useful_fmas_per_cycle(6, 16, avx2, extent=8) < useful_fmas_per_cycle(4, 16, avx2, extent=8)
    assert accumulator_tile([4, 6], [16], avx2, extent=8) == (4, 16)


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.integers(1, 16), min_size=1, max_size=5),
       columns=st.lists(st.integers(1, 128), min_size=1, max_size=5), target=st.sampled_from(sorted(FILES)))
def test_the_chosen_tile_fits_when_any_does_and_none_that_fits_is_faster(rows, columns, target):
    rf = FILES[target]
    r, c = accumulator_tile(rows, columns, rf)
    assert r in rows and c in columns
    fitting = [(a, b) for a in rows for b in columns if fits(a, rf.vectors(b), rf)]
    if fitting:
        assert fits(r, rf.vectors(c), rf)
        best = max(round(useful_fmas_per_cycle(a, b, rf), 6) for a, b in fitting)
        assert round(useful_fmas_per_cycle(r, c, rf), 6) == best
    else:
        assert registers_needed(r, rf.vectors(c), rf) == min(registers_needed(a, rf.vectors(b), rf)
                                                             for a in rows for b in columns)


def test_no_options_is_an_error():
    with pytest.raises(ValueError, match="no row or column options"):
        accumulator_tile([], [8], FILES[AVX2])


@pytest.mark.parametrize("target, gemm, winograd, channels, pointwise", [
    (AVX512, (8, 32), (7, 32), (7, 32), (4, 2)),
    (AVX2, (6, 16), (7, 8), (7, 8), (2, 2)),
    ("c", (8, 2), (7, 64), (7, 64), (8, 1)),
])
def test_operator_tiles_follow_the_register_file(target, gemm, winograd, channels, pointwise):
    """GEMM 1024, Winograd products of 14 tiles x 64 channels, 14-wide rows of 512 channels, a 1x1
    convolution of 256 channels over 28 x 28 in bands of whole rows: AVX2's tiles are narrower or shorter."""
    rf = RegisterFile.of(ts.Target(target))
    assert matmul_tile(1024, 1024, rf) == gemm
    assert product_tile(14, 64, rf) == winograd
    assert register_tile(14, 512, rf) == channels
    assert pointwise_tile(256, 28, 28, rf) == pointwise


def _accumulators(source: str, name: str) -> int:
    """Vector (or scalar) variables a register tile of stage ``name`` was promoted to."""
    return len(set(re.findall(rf"\b{name}_r(\d+);", source)))


@pytest.mark.parametrize("target", [AVX512, AVX2, "c"])
def test_gemm_and_pointwise_kernels_hold_their_tiles_and_match_numpy(target, rand):
    """Kernels built for a SIMD ``target`` keep as many vector accumulators as the tile (within the register
    file), and the same schedule run here agrees with NumPy."""
    x, w = rand((16, 24), low=-1), rand((64, 24), low=-1)
    packed = nn.pack_dense_panels(w, 16)
    data, weight = rand((1, 8, 4, 6), low=-1), rand((16, 8, 1, 1), low=-1)

    def make():
        xt, pt = ts.placeholder(x.shape, name="x"), ts.placeholder(packed.shape, name="p")
        dense = nn.dense_panels(xt, pt)
        dt, wt = ts.placeholder(data.shape, name="d"), ts.placeholder(weight.shape, name="w")
        conv = nn.relu(nn.conv2d(dt, wt))
        return (ts.build(nn.default_schedule(dense), [xt, pt, dense], name="tiling_dense"),
                ts.build(nn.default_schedule(conv), [dt, wt, conv], name="tiling_pointwise"))

    (dense_code, conv_code), (dense_here, conv_here) = pinned(make, target)
    rf = RegisterFile.of(ts.Target(target))
    if rf.lanes > 1:                       # (portable C keeps its tiles in memory: the C compiler vectorizes)
        rows, _ = accumulator_tile(row_options(16, GEMM_ROWS, MIN_TILE_ROWS), [16], rf, extent=16)
        assert _accumulators(dense_code.c_source, "dense_panels_local") == rows * rf.vectors(16) <= rf.registers
        channels, band = pointwise_tile(16, 4, 6, rf)
        assert _accumulators(conv_code.c_source, "conv2d") == channels * rf.vectors(band * 6) <= rf.registers
    out = np.empty((16, 64), np.float32)
    dense_here(x, packed, out)
    np.testing.assert_allclose(out, x.astype(np.float64) @ w.T, rtol=1e-5, atol=1e-5)
    y = np.empty((1, 16, 4, 6), np.float32)
    conv_here(data, weight, y)
    want = np.einsum("nchw,kc->nkhw", data.astype(np.float64), weight[:, :, 0, 0])
    np.testing.assert_allclose(y, np.maximum(want, 0), rtol=1e-5, atol=1e-5)


def _conv_reference(x: np.ndarray, w: np.ndarray, stride: int, padding: int) -> np.ndarray:
    """NCHW convolution in float64 by shifted windows (batch 1)."""
    padded = np.pad(x[0].astype(np.float64), ((0, 0), (padding, padding), (padding, padding)))
    kh, kw = w.shape[2:]
    out_h, out_w = (padded.shape[1] - kh) // stride + 1, (padded.shape[2] - kw) // stride + 1
    out = np.zeros((w.shape[0], out_h, out_w))
    for dy in range(kh):
        for dx in range(kw):
            window = padded[:, dy:dy + stride * out_h:stride, dx:dx + stride * out_w:stride]
            out += np.einsum("chw,kc->khw", window, w[:, :, dy, dx].astype(np.float64))
    return out[None]


@pytest.mark.parametrize("target", [AVX512, AVX2, "c"])
def test_winograd_and_channel_blocked_convolutions_match_numpy(target, rand):
    """The two convolutions whose register tiles are blocks of output channels, with the blocks (and the
    weights packed in them) from ``target``'s register file."""
    x, w = rand((1, 8, 8, 8), low=-1), rand((32, 8, 3, 3), low=-1)
    rf = RegisterFile.of(ts.Target(target))
    _, block = register_tile(4, 32, rf)
    transformed, blocked = winograd.transform_weight(w, 2), weight_last(w, block)

    def make():
        data = ts.placeholder(x.shape, name="x")
        u, b = ts.placeholder(transformed.shape, name="u"), ts.placeholder(blocked.shape, name="b")
        tiles = nn.relu(winograd.winograd_conv2d(data, u, padding=1))
        strided = nn.relu(conv2d_weight_last(data, b, strides=2, padding=1))
        return (ts.build(nn.default_schedule(tiles), [data, u, tiles], name="tiling_winograd"),
                ts.build(nn.default_schedule(strided), [data, b, strided], name="tiling_weight_last"))

    _, (winograd_here, strided_here) = pinned(make, target)
    tiles = np.empty((1, 32, 4, 2, 4, 2), np.float32)                  # (n, k, tile rows, 2, tile columns, 2)
    winograd_here(x, transformed, tiles)
    np.testing.assert_allclose(tiles.reshape(1, 32, 8, 8), np.maximum(_conv_reference(x, w, 1, 1), 0),
                               rtol=1e-4, atol=1e-4)
    out = np.empty((1, 32, 4, 4), np.float32)
    strided_here(x, blocked, out)
    np.testing.assert_allclose(out, np.maximum(_conv_reference(x, w, 2, 1), 0), rtol=1e-4, atol=1e-4)


def _hot_loop(source: str, target: str) -> str:
    """The assembly of the loop of ``source`` (a kernel's C) with the most multiply-adds, as gcc compiles it
    for ``target``."""
    t = ts.Target(target)
    flags = [f for f in t.flags if f not in ("-fopenmp", "-w")]
    asm = subprocess.run([*t.compiler, "-x", "c", "-", "-S", "-o", "-", "-w", "-I", str(RUNTIME_DIR), *flags],
                         input=source, capture_output=True, text=True, check=True).stdout
    return max(re.split(r"\n\.L\d+:", asm), key=lambda block: block.count("vfmadd"))


@pytest.mark.parametrize("target, rows, vectors", [
    (AVX2, 2, 2), (AVX2, 3, 2), (AVX2, 6, 2), (AVX2, 4, 1), (AVX2, 2, 4),
    (AVX512, 2, 4), (AVX512, 3, 2), (AVX512, 4, 2), (AVX512, 8, 2), (AVX512, 8, 1), (AVX512, 7, 2),
])
def test_the_model_matches_the_assembly_gcc_emits(target, rows, vectors, rand):
    """A GEMM register tile built by tesched for ``target`` and compiled by gcc: its hot loop issues
    :func:`loads_per_step` loads per step (folded column reloads, broadcasts, embedded or not) and, as
    :func:`fits` says, touches no stack slot; the kernel agrees with NumPy."""
    rf = RegisterFile.of(ts.Target(target))
    block = vectors * rf.lanes
    x, w = rand((4 * rows, 64), low=-1), rand((2 * block, 64), low=-1)
    packed = nn.pack_dense_panels(w, block)

    def make():
        xt, pt = ts.placeholder(x.shape, name="x"), ts.placeholder(packed.shape, name="p")
        out = nn.dense_panels(xt, pt)
        s = ts.create_schedule(out.op)
        register_tiles(s, s.cache_write(out, "local"), out, rows, block)
        return ts.build(s, [xt, pt, out], name=f"tile_{rows}x{vectors}")

    kernel, here = pinned(make, target)
    loop = _hot_loop(kernel.c_source, target)
    steps = loop.count("vfmadd") // (rows * vectors)
    assert steps * rows * vectors == loop.count("vfmadd") and steps >= 1
    folded = len(re.findall(r"vfmadd\w+\s+-?\d*\(", loop))
    loaded = len(re.findall(r"vmov\w+\s+-?\d*\(%\w+(?:,%\w+,\d)?\),\s*%[yz]mm", loop))
    assert folded + loaded + loop.count("vbroadcastss") == steps * loads_per_step(rows, vectors, rf)
    assert fits(rows, vectors, rf) and "(%rsp)" not in loop and "(%rbp)" not in loop
    out = np.empty((x.shape[0], w.shape[0]), np.float32)
    here(x, packed, out)
    np.testing.assert_allclose(out, x.astype(np.float64) @ w.T, rtol=1e-5, atol=1e-4)
