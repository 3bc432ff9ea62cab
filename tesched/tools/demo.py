"""The demo behind ``python -m tesched demo``: fusion and scheduling, checked against NumPy and timed.

Part (a) declares a 3x3 convolution (padding as its own ``pad`` stage written with ``if_then_else``, the
convolution as ``sum`` over ``rc, ry, rx``) followed by ``relu``, and builds three schedules of it:

- ``unfused``: ``pad``, ``conv`` and ``relu`` each computed in full at the root (three ``produce`` blocks,
  two full-size intermediate tensors);
- ``fused, pad inlined``: ``conv`` computed per filter of each row tile of ``relu`` (``compute_at``) and
  ``pad`` inlined (its ``if_then_else`` substituted into the convolution's innermost loop);
- ``fused, pad at tile``: the same ``conv``, and ``pad`` computed per row tile of ``relu``; the ``pad``
  buffer covers the tile's rows plus the 3x3 halo, as the polyhedral footprint says.

Part (b) builds a 512x512 matmul with register tiles (write cache, unroll, vectorize) computed in
parallel and compares it with NumPy's ``@``.

Every kernel is checked with ``np.testing.assert_allclose`` before it is timed; times are medians with
their spread (the interquartile range) measured when it runs, and every row of the table is explained
under it (:func:`explain`), including why a variant loses. When the spreads show that other processes
took the cores, it says so. It uses tesched as a user would, and holds no numbers of its own.
"""
from __future__ import annotations

import statistics
import textwrap
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

import tesched as ts
from tesched.driver.kernel import Kernel
from tesched.driver.timing import BUSY_SPREAD, sample, warm_up

CONV_VARIANTS = ("unfused", "fused, pad inlined", "fused, pad at tile")
ROW_TILE = 14
MATMUL_TILE_ROWS = 8
MATMUL_TILE_COLUMNS = 32


@dataclass(frozen=True)
class DemoSizes:
    """Problem sizes: a ``batch x channels x height x width`` conv with ``channels`` filters of 3x3,
    and an ``n x n`` matmul; ``repeat`` timed runs per kernel."""

    batch: int
    channels: int
    height: int
    width: int
    n: int
    repeat: int


FULL = DemoSizes(batch=1, channels=32, height=56, width=56, n=512, repeat=25)
QUICK = DemoSizes(batch=1, channels=4, height=28, width=9, n=48, repeat=3)


class ConvRelu(NamedTuple):
    """The tensors of the conv+relu pipeline, inputs first."""

    data: ts.Tensor
    weight: ts.Tensor
    pad: ts.Tensor
    conv: ts.Tensor
    relu: ts.Tensor


@dataclass(frozen=True)
class Timing:
    """One row of the demo's table: median, spread (interquartile range) and fastest of the timed runs,
    in seconds; ``baseline`` names the row this one is compared to."""

    label: str
    median: float
    spread: float
    best: float
    flops: float
    baseline: str

    @property
    def variant(self) -> str:
        """What follows the last comma of the label (``"fused, pad at tile"`` gives ``"pad at tile"``)."""
        return self.label.rsplit(", ", 1)[1]


def declare_conv_relu(sizes: DemoSizes) -> ConvRelu:
    """``relu(conv2d(data, weight))`` with a 3x3 kernel, stride 1, zero padding 1, ``channels`` filters."""
    batch, channels, height, width = sizes.batch, sizes.channels, sizes.height, sizes.width
    data = ts.placeholder((batch, channels, height, width), name="data")
    weight = ts.placeholder((channels, channels, 3, 3), name="weight")
    pad = ts.compute(
        (batch, channels, height + 2, width + 2),
        lambda n, c, y, x: ts.if_then_else(ts.all(y >= 1, y <= height, x >= 1, x <= width),
                                           data[n, c, y - 1, x - 1], 0.0),
        name="pad")
    rc = ts.reduce_axis((0, channels), name="rc")
    ry = ts.reduce_axis((0, 3), name="ry")
    rx = ts.reduce_axis((0, 3), name="rx")
    conv = ts.compute(
        (batch, channels, height, width),
        lambda n, f, y, x: ts.sum(pad[n, rc, y + ry, x + rx] * weight[f, rc, ry, rx], axis=[rc, ry, rx]),
        name="conv")
    relu = ts.compute(conv.shape, lambda n, f, y, x: ts.maximum(conv[n, f, y, x], 0.0), name="relu")
    return ConvRelu(data, weight, pad, conv, relu)


def schedule_conv_relu(net: ConvRelu, variant: str) -> ts.Schedule:
    """One of :data:`CONV_VARIANTS`. All share the loop orders: the convolution's innermost loop runs
    along a row (``x``, vectorized); ``relu`` runs over tiles of :data:`ROW_TILE` rows (spread over the
    cores), then filters ``f``, then the rows of the tile."""
    if variant not in CONV_VARIANTS:
        raise ValueError(f"unknown conv variant {variant!r}; expected one of {CONV_VARIANTS}")
    s = ts.create_schedule(net.relu.op)
    n, f, y, x = s[net.conv].op.axis
    rc, ry, rx = s[net.conv].op.reduce_axis
    s[net.conv].reorder(n, f, y, rc, ry, rx, x)
    s[net.conv].vectorize(x)
    r_n, r_f, r_y, r_x = s[net.relu].op.axis
    row_tile, row = s[net.relu].split(r_y, factor=ROW_TILE)
    s[net.relu].reorder(r_n, row_tile, r_f, row, r_x)
    s[net.relu].vectorize(r_x)
    s[net.relu].parallel(row_tile)
    if variant == "unfused":
        s[net.conv].parallel(f)
        return s
    s[net.conv].compute_at(s[net.relu], r_f)            # one filter, ROW_TILE rows at a time
    if variant == "fused, pad inlined":
        s[net.pad].compute_inline()
    else:
        s[net.pad].compute_at(s[net.relu], row_tile)    # all channels, ROW_TILE + 2 rows (the halo)
    return s


def conv2d_reference(data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """NumPy 3x3 convolution, stride 1, zero padding 1 (NCHW data, OIHW weight)."""
    padded = np.pad(data, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))  # N C H W 3 3
    return np.tensordot(windows, weight, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2)


def conv_relu_reference(data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    return np.maximum(conv2d_reference(data, weight), 0.0)


def declare_matmul(n: int) -> tuple[ts.Tensor, ts.Tensor, ts.Tensor]:
    a = ts.placeholder((n, n), name="A")
    b = ts.placeholder((n, n), name="B")
    k = ts.reduce_axis((0, n), name="k")
    c = ts.compute((n, n), lambda i, j: ts.sum(a[i, k] * b[k, j], axis=k), name="C")
    return a, b, c


def schedule_matmul(c: ts.Tensor) -> ts.Schedule:
    """TVM's "optimize GEMM on CPU" recipe: tiles of 8 rows x 32 columns of C, each accumulated in a write
    cache (cache_write) whose 8 rows are unrolled and 32 columns vectorized, so the whole tile stays in
    vector registers across the reduction; tile rows in parallel."""
    s = ts.create_schedule(c.op)
    cache = s.cache_write(c, "local")
    i, j = c.op.axis
    io, jo, ii, ji = s[c].tile(i, j, MATMUL_TILE_ROWS, MATMUL_TILE_COLUMNS)
    s[cache].compute_at(s[c], jo)
    ci, cj = s[cache].op.axis
    s[cache].reorder(s[cache].op.reduce_axis[0], ci, cj)
    s[cache].unroll(ci)
    s[cache].vectorize(cj)
    s[c].vectorize(ji)
    s[c].parallel(io)
    return s


def time_call(call: Callable[[], object], repeat: int) -> tuple[float, float, float]:
    """Median, spread (interquartile range; 0 for fewer than two runs) and minimum wall time of ``call()``
    over ``repeat`` runs, after warming it up (:func:`~tesched.driver.timing.warm_up`)."""
    warm_up(call)
    times = sample(call, repeat, limit=repeat)
    spread = 0.0
    if len(times) >= 2:
        low, _, high = statistics.quantiles(times, n=4)
        spread = high - low
    return statistics.median(times), spread, min(times)


def build_conv_relu(sizes: DemoSizes, variant: str) -> Kernel:
    net = declare_conv_relu(sizes)
    s = schedule_conv_relu(net, variant)
    return ts.build(s, [net.data, net.weight, net.relu], name="conv_relu")


def run_conv_relu(sizes: DemoSizes, rng: np.random.Generator,
                  show_ir: Callable[[str], None] | None = None) -> list[Timing]:
    """Build every conv variant, check it against NumPy, time it. ``show_ir`` receives the fused IR."""
    shape = (sizes.batch, sizes.channels, sizes.height, sizes.width)
    data = rng.standard_normal(shape, dtype=np.float32)
    weight = rng.standard_normal((sizes.channels, sizes.channels, 3, 3), dtype=np.float32)
    expected = conv_relu_reference(data, weight)
    flops = 2.0 * np.prod(shape) * sizes.channels * 9
    label = f"conv3x3+relu {'x'.join(map(str, shape))}"
    rows = [Timing(f"{label}, NumPy", *time_call(lambda: conv_relu_reference(data, weight), sizes.repeat),
                   flops, baseline=f"{label}, unfused")]
    for variant in CONV_VARIANTS:
        kernel = build_conv_relu(sizes, variant)
        out = kernel(data, weight)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
        if show_ir is not None and variant == "fused, pad at tile":
            show_ir(str(kernel.lowered))
        rows.append(Timing(f"{label}, {variant}", *time_call(lambda: kernel(data, weight, out), sizes.repeat),
                           flops, baseline=f"{label}, unfused"))
    return rows


def run_matmul(sizes: DemoSizes, rng: np.random.Generator) -> list[Timing]:
    """Build the scheduled matmul, check it against NumPy, time both."""
    n = sizes.n
    a_t, b_t, c_t = declare_matmul(n)
    kernel = ts.build(schedule_matmul(c_t), [a_t, b_t, c_t], name="matmul")
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = kernel(a, b)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-3)
    label = f"matmul {n}x{n}"
    flops = 2.0 * n ** 3
    return [Timing(f"{label}, NumPy", *time_call(lambda: np.matmul(a, b, out=c), sizes.repeat), flops,
                   baseline=f"{label}, NumPy"),
            Timing(f"{label}, tesched", *time_call(lambda: kernel(a, b, c), sizes.repeat), flops,
                   baseline=f"{label}, NumPy")]


def format_table(rows: list[Timing]) -> str:
    """Median time with its spread (interquartile range), GFLOP/s at the median, and the speed-up over
    each row's baseline (baseline median / row median)."""
    by_label = {row.label: row for row in rows}
    width = max(len(row.label) for row in rows)
    lines = [f"{'kernel':<{width}}  {'median ms':>9}  {'spread ms':>9}  {'GFLOP/s':>7}  speed-up (medians)",
             "-" * (width + 60)]
    for row in rows:
        base = by_label[row.baseline]
        lines.append(f"{row.label:<{width}}  {row.median * 1e3:9.3f}  {row.spread * 1e3:9.3f}  "
                     f"{row.flops / row.median / 1e9:7.1f}  {base.median / row.median:6.2f}x vs {base.variant}")
    return "\n".join(lines)


def explain(row: Timing, baseline: Timing) -> str:
    """Why ``row`` takes the time it does, compared with its ``baseline`` (one sentence or two)."""
    slower = row.median > baseline.median
    variant = row.variant
    if row.label.startswith("conv"):
        if variant == "NumPy":
            return ("NumPy's reference: sliding windows of the padded input contracted with np.tensordot, then "
                    "np.maximum; the windows are copied before the product and the result is transposed, so it "
                    "is a correctness reference, not a fast convolution.")
        if variant == "unfused":
            return ("the baseline: pad, conv and relu each computed in full, one after the other; the two "
                    "intermediate tensors (pad and conv, each the size of the image) are written to memory and "
                    "read back, while each stage's inner loop is vectorized along the row.")
        if variant == "pad inlined":
            why = ("pad's if_then_else is substituted into the convolution's innermost loop, so its select (a "
                   "bounds test and a conditional read) runs 9 times per output element and input channel (once "
                   "per tap of the 3x3 window) instead of once per padded element, and the conditional read keeps "
                   "that loop from explicit SIMD (it is left to the C compiler as a scalar loop)")
            return (f"loses against unfused: {why}." if slower else
                    f"faster than unfused here even though {why}: the saved pad tensor outweighs it on this machine.")
        if variant == "pad at tile":
            return ("fused: for each tile of rows, pad computes its rows plus the 3x3 halo into a small buffer "
                    "(one select per padded element), conv reads that buffer with vectorized loads, and relu "
                    "reads conv while it is still in cache; no full-size intermediate tensor is written.")
    if variant == "NumPy":
        return "np.matmul calls the BLAS library NumPy was built with (OpenBLAS: hand-written assembly kernels)."
    return ("8 x 32 tiles of C accumulated in vector registers across the whole reduction (cache_write, "
            f"unroll, vectorize), tile rows spread over the cores; {'slower than' if slower else 'ahead of'} "
            "the BLAS library here, which also packs A and B into cache-sized panels.")


def busy_note(rows: list[Timing]) -> str | None:
    """A warning naming the rows whose spread exceeds :data:`~tesched.driver.timing.BUSY_SPREAD` of
    their median (other processes took the cores), or None."""
    noisy = [row.variant if row.label.startswith("conv") else row.label for row in rows
             if row.spread > BUSY_SPREAD * row.median]
    if not noisy:
        return None
    return (f"WARNING: the machine was busy while timing ({', '.join(noisy)}: spread above {BUSY_SPREAD:.0%} of "
            "the median); the ratios above are not reliable. Run again when it is quiet "
            "(OMP_WAIT_POLICY=passive helps when it cannot be).")


def run_demo(sizes: DemoSizes = FULL, out: Callable[[str], None] = print, seed: int = 0) -> list[Timing]:
    """The whole demo: print the fused conv IR, then the table. Returns the table's rows."""
    rng = np.random.default_rng(seed)
    out("Fused conv3x3+relu: pad computed per row tile of relu, conv per filter of the tile (compute_at)\n")
    rows = run_conv_relu(sizes, rng, show_ir=out)
    rows += run_matmul(sizes, rng)
    out("All kernels match NumPy (assert_allclose). Times: median of "
        f"{sizes.repeat} runs on this machine, and their spread (interquartile range).\n")
    out(format_table(rows))
    by_label = {row.label: row for row in rows}
    out("\nWhy each row takes its time:")
    for row in rows:
        out(textwrap.fill(f"- {row.label}: {explain(row, by_label[row.baseline])}", width=110,
                          subsequent_indent="  "))
    note = busy_note(rows)
    if note:
        out("\n" + textwrap.fill(note, width=110))
    return rows
