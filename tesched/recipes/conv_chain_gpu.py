"""conv -> relu -> conv (:mod:`tesched.recipes.conv_chain`) scheduled for a GPU, unfused or fused into one
kernel without a global synchronisation.

Both schedules tile each convolution's output rows and columns into ``tile x tile`` blocks
(``gpu_tile``: a block per tile, a thread per output pixel, each thread computing every output channel);
the paddings and the relu are inlined.

- ``unfused``: two kernels; conv1 writes its whole output to global memory, conv2 reads it back.
- ``fused``: one kernel. Each block computes the part of conv1 its tile of conv2 needs, its halo
  included (``(tile + 2)^2`` pixels, one thread each), into shared memory (``compute_at`` the block loop),
  then, after a barrier, its tile of conv2 from there. Neighbouring blocks recompute the halo rows and
  columns (``lower()`` prints the redundancy) instead of waiting for each other: no global sync.

:func:`traffic` compares the global-memory traffic of the two from their exact footprints. This module
builds schedules; it neither runs nor times them (``benchmarks/gpu.py`` does).
"""
from __future__ import annotations

from dataclasses import dataclass

import tesched as ts
from tesched.recipes.conv_chain import ConvChain


def _tile(s: ts.Schedule, conv: ts.Tensor, tile: int) -> None:
    n, f, y, x = conv.op.axis
    yo, xo, yi, xi = s[conv].gpu_tile(y, x, tile, tile)
    s[conv].reorder(n, yo, xo, yi, xi, f)
    s[conv].bind(n, ts.thread_axis("blockIdx.z"))


def unfused(chain: ConvChain, tile: int = 8) -> ts.Schedule:
    """Two kernels, conv1 then conv2, each in ``tile x tile`` blocks of one thread per output pixel."""
    s = ts.create_schedule(chain.conv2.op)
    for stage in (chain.pad1, chain.relu, chain.pad2):
        s[stage].compute_inline()
    for conv in (chain.conv1, chain.conv2):
        _tile(s, conv, tile)
    return s


def fused(chain: ConvChain, tile: int = 8) -> ts.Schedule:
    """One kernel: per ``tile x tile`` block of conv2, the ``(tile + 2)^2`` pixels of conv1 it reads computed
    in shared memory by one thread each, then the block's conv2 from there."""
    s = ts.create_schedule(chain.conv2.op)
    for stage in (chain.pad1, chain.relu, chain.pad2):
        s[stage].compute_inline()
    _tile(s, chain.conv2, tile)
    block_loop = s[chain.conv2].leaf_iter_vars[2]       # x.outer, the innermost block loop
    s[chain.conv1].compute_at(s[chain.conv2], block_loop)
    n, f, y, x = chain.conv1.op.axis
    s[chain.conv1].reorder(n, y, x, f)
    s[chain.conv1].bind(y, ts.thread_axis("threadIdx.y"))
    s[chain.conv1].bind(x, ts.thread_axis("threadIdx.x"))
    return s


@dataclass(frozen=True)
class TrafficComparison:
    """Elements moved between global memory and the blocks by each version (``tesched.poly.traffic``)."""

    fused: int
    unfused: int

    @property
    def ratio(self) -> float:
        """Fused traffic over unfused traffic."""
        return self.fused / self.unfused


def traffic(chain: ConvChain, tile: int = 8) -> TrafficComparison:
    """The global-memory traffic of :func:`fused` and :func:`unfused`, summed over their blocks."""
    return TrafficComparison(ts.lower(fused(chain, tile), chain.args).global_traffic.total,
                             ts.lower(unfused(chain, tile), chain.args).global_traffic.total)
