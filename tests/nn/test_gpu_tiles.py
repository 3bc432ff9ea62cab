"""Tile sizes from device limits, the staging test, and the shared-memory estimate against the exact
footprints the kernel printer allocates (``cuda`` target: no device needed)."""
import pytest

import tesched as ts
import tesched.nn as nn
from tesched.nn.gpu_tiles import (BlockTile, GpuLimits, choose_tile, fit_shared, limits_of, reduction_tile,
                                            reuse, staged_bytes, tile_reduction, tiled_axes, worth_staging)
from tesched.codegen.gpu import generate_gpu
from tesched.lower.pipeline import lower_for_target
from tests.gpu_helpers import need_opencl

LARGE = GpuLimits(1024, 48 << 10, "test")


def _gemm(m, n, k):
    A, B = ts.placeholder((m, k), name="A"), ts.placeholder((k, n), name="B")
    r = ts.reduce_axis((0, k), name="k")
    return A, B, ts.compute((m, n), lambda i, j: ts.sum(A[i, r] * B[r, j], axis=r), name="C")


@pytest.mark.parametrize("extents, threads, regs", [((200, 200), (16, 16), (4, 4)), ((40, 9), (16, 9), (2, 1)),
                                                    ((1, 700), (1, 175), (1, 4)), ((3, 5), (3, 5), (1, 1))])
def test_tiles_follow_the_extents(extents, threads, regs):
    tile = choose_tile(extents, 100, LARGE)
    assert (tile.threads, tile.regs, tile.ktile) == (threads, regs, 16)


def test_tiles_stay_within_the_thread_limit():
    tile = choose_tile((500, 500), 8, GpuLimits(32, 1 << 10, "test"))
    assert tile.threads[0] * tile.threads[1] <= 32 and tile.ktile == 8


def test_reuse_names_what_the_block_shares():
    A, B, C = _gemm(8, 8, 8)
    i, j = tiled_axes(C.op)
    assert "does not depend on j" in reuse(C.op, A, [i, j])
    assert "does not depend on i" in reuse(C.op, B, [i, j])
    assert reuse(C.op, A, [i]) is None                              # rows only: each thread its own row
    x, w = ts.placeholder((1, 2, 6, 6), name="x"), ts.placeholder((3, 2, 3, 3), name="w")
    conv = nn.conv2d(x, w, strides=1, padding=1)
    pad = conv.op.input_tensors[0]
    assert "windows of yy, xx" in reuse(conv.op, pad, tiled_axes(conv.op)) and worth_staging(conv.op)
    y = ts.compute((6, 4), lambda a, b: x[0, 0, a, b] + x[0, 0, a, b + 2], name="y")
    assert "read at 2 offsets" in reuse(y.op, x, tiled_axes(y.op))


@pytest.mark.parametrize("ktile, channels", [(4, 1), (16, 1), (4, 5)])
def test_the_staged_estimate_is_the_allocated_shared_memory(ktile, channels):
    x, w = ts.placeholder((1, 6, 21, 19), name="x"), ts.placeholder((5, 6, 3, 3), name="w")
    conv = nn.conv2d(x, w, strides=2, padding=1)
    s = ts.create_schedule(conv.op)
    s[conv.op.input_tensors[0]].compute_inline()
    local = s.cache_write(conv, "local")
    tile = BlockTile((8, 8), (1, 1), ktile, channels)
    op = s[local].op
    staged = [t for t in op.input_tensors if reuse(op, t, tiled_axes(op))]
    estimate = staged_bytes(op, staged, tile)
    tile_reduction(s, conv, local, tile)
    target = ts.Target("cuda")
    [kernel] = generate_gpu(lower_for_target(ts.lower(s, [x, w, conv]), target), target).kernels
    steps = min(ktile, 6)
    assert kernel.shared_bytes == estimate == (steps * 17 * 17 + channels * steps * 9) * 4


def test_convolutions_keep_whole_channel_tiles_in_registers():
    x = ts.placeholder((1, 8, 40, 40), name="x")
    for filters, channels in ((8, 4), (6, 2), (9, 1)):
        conv = nn.conv2d(x, ts.placeholder((filters, 8, 3, 3), name="w"), strides=1, padding=1)
        tile = reduction_tile(conv.op, LARGE)
        assert tile.channels == channels and tile.regs[0] * tile.regs[1] * channels <= 16
    _, _, C = _gemm(64, 64, 64)
    assert reduction_tile(C.op, LARGE).channels == 1                # a matrix has no loop outside its tile


def test_steps_shrink_until_the_panels_fit():
    _, _, C = _gemm(64, 64, 64)
    tile = fit_shared(C.op, BlockTile((16, 16), (2, 2), 16), GpuLimits(256, 1024, "test"))
    assert tile.ktile == 4                                            # 2 panels of 32 x 4 floats: 1 KiB
    tile = fit_shared(C.op, BlockTile((16, 16), (2, 2), 16), GpuLimits(256, 96, "test"))
    assert (tile.ktile, tile.regs, tile.threads) == (1, (1, 1), (8, 16))   # 8 + 16 floats: steps, registers, threads


def test_opencl_limits_are_the_devices():
    need_opencl()
    from tesched.driver.gpu import opencl_queue
    device = opencl_queue().device
    limits = limits_of(ts.Target("opencl"))
    assert (limits.max_threads, limits.shared_bytes) == (device.max_work_group_size, device.local_mem_size)
    assert limits_of(ts.Target("cuda")).max_threads == 1024
