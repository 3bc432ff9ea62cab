"""Fusion with ``compute_at``: conv->conv with halo recompute, and three-stage chains, against NumPy.

Each schedule computes the first convolution inside a loop of the second (per tile, per row, per
filter), with the stages between (pad, relu) inlined or computed at the same loop. The tests check the
kernel against NumPy, that ``lower()`` allocates the producer per tile with the footprint's extents, and
that ``redundancy`` counts the recomputed points as a hand count over the tiles does.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np
import pytest
from conv_helpers import (
    ATOL,
    RTOL,
    ConvChain,
    ConvLayer,
    chain_ref,
    check_chain,
    conv2d_ref,
    declare_conv_chain,
    loop_body,
)

import tesched as ts


@dataclass(frozen=True)
class Fusion:
    """A conv->conv pipeline and where its first convolution is computed inside the second."""

    size: int
    tile: tuple[int, int]
    at: str = "x.outer"             # loop of conv2 conv1 is computed in: f, y.outer, x.outer or y.inner
    filters_inside: bool = False    # conv2's filter loop f inside the tile loops
    first: ConvLayer = ConvLayer(4)
    second: ConvLayer = ConvLayer(4)
    relu_at: bool = False           # with relu after conv1: computed at the same loop (else inlined)
    pads_at: bool = False           # pads computed at the same loop (else inlined)
    in_channels: int = 3


def declare(case: Fusion) -> ConvChain:
    return declare_conv_chain(case.in_channels, case.size, [case.first, case.second])


def schedule(chain: ConvChain, case: Fusion) -> ts.Schedule:
    conv1, conv2 = chain.convs
    s = ts.create_schedule(chain.output.op)
    n, f, y, x = s[conv2].op.axis
    yo, xo, yi, xi = s[conv2].tile(y, x, *case.tile)
    if case.filters_inside:
        s[conv2].reorder(n, yo, xo, f, yi, xi)
    loop = {"f": f, "y.outer": yo, "x.outer": xo, "y.inner": yi}[case.at]
    s[conv1].compute_at(s[conv2], loop)
    relu = chain.relus[0]
    if relu is not None:
        if case.relu_at:
            s[relu].compute_at(s[conv2], loop)
        else:
            s[relu].compute_inline()
    for pad in chain.pads:
        if case.pads_at:
            s[pad].compute_at(s[conv2], loop)
        else:
            s[pad].compute_inline()
    return s


def footprint_extent(tile: int, layer: ConvLayer) -> int:
    """Rows (or columns) of the producer that ``tile`` outputs of ``layer`` read, away from borders."""
    return (tile - 1) * layer.stride + (layer.kernel - 1) * layer.dilation + 1


def conv1_box(first_out: int, second: ConvLayer, lo: int, hi: int) -> int:
    """Extent of the box of conv1 rows read by conv2 outputs ``lo..hi``, clipped to conv1's extent."""
    top = max(0, lo * second.stride - second.padding)
    bottom = min(first_out - 1, hi * second.stride - second.padding + (second.kernel - 1) * second.dilation)
    return bottom - top + 1


def loop_order(case: Fusion) -> list[str]:
    """conv2's loops, outermost first, as ``schedule`` orders them."""
    outer = ["y.outer", "x.outer", "f"] if case.filters_inside else ["f", "y.outer", "x.outer"]
    return outer + ["y.inner", "x.inner"]


def ranges(extent: int, tile: int, split: bool, per_point: bool) -> list[tuple[int, int]]:
    """The output ranges ``(lo, hi)`` one iteration covers along an axis tiled by ``tile``."""
    if not split:
        return [(0, extent - 1)]
    tiles = [(lo, min(lo + tile, extent) - 1) for lo in range(0, extent, tile)]
    return [(k, k) for lo, hi in tiles for k in range(lo, hi + 1)] if per_point else tiles


def conv1_boxes(case: Fusion, conv1_shape: tuple, conv2_shape: tuple) -> list[tuple[int, int]]:
    """(rows, columns) of the box of conv1 that each iteration of the chosen loop computes, counted by
    walking conv2's loops that enclose it (an enclosing filter loop repeats every box)."""
    enclosing = loop_order(case)[:loop_order(case).index(case.at) + 1]
    height1, width1 = conv1_shape[2:]
    height2, width2 = conv2_shape[2:]
    rows = ranges(height2, case.tile[0], "y.outer" in enclosing, "y.inner" in enclosing)
    cols = ranges(width2, case.tile[1], "x.outer" in enclosing, False)
    repeats = conv2_shape[1] if "f" in enclosing else 1
    boxes = [(conv1_box(height1, case.second, *r), conv1_box(width1, case.second, *c))
             for r, c in itertools.product(rows, cols)]
    return boxes * repeats


def hand_count_conv1(case: Fusion, conv1_shape: tuple, conv2_shape: tuple) -> float:
    """Points of conv1 computed by ``schedule(case)`` over conv1's size."""
    _, filters1, height1, width1 = conv1_shape
    points = sum(h * w * filters1 for h, w in conv1_boxes(case, conv1_shape, conv2_shape))
    return points / (filters1 * height1 * width1)


FUSION_CASES = {
    "8x8 tiles at x.outer": Fusion(20, (8, 8)),
    "7x5 tiles, not dividing": Fusion(17, (7, 5)),
    "full-width row tiles at y.outer": Fusion(18, (6, 18), at="y.outer"),
    "1x1 tiles": Fusion(9, (1, 1), first=ConvLayer(4), second=ConvLayer(4)),
    "8x8 tiles at y.outer": Fusion(20, (8, 8), at="y.outer"),
    "8x8 tiles at y.inner": Fusion(20, (8, 8), at="y.inner"),
    "filters inside the tile": Fusion(20, (8, 8), filters_inside=True),
    "filters inside the tile, at f": Fusion(20, (8, 8), at="f", filters_inside=True),
    "filters inside the tile, at y.inner": Fusion(16, (5, 6), at="y.inner", filters_inside=True),
    "filters outside the tile, at f": Fusion(16, (5, 6), at="f"),
    "conv1 stride 2": Fusion(20, (4, 4), first=ConvLayer(4, stride=2)),
    "conv2 stride 2": Fusion(20, (4, 3), second=ConvLayer(4, stride=2)),
    "both stride 2": Fusion(20, (3, 3), first=ConvLayer(4, stride=2), second=ConvLayer(5, stride=2)),
    "conv1 dilation 2": Fusion(16, (5, 5), first=ConvLayer(4, dilation=2, padding=2)),
    "conv2 dilation 2": Fusion(16, (6, 4), second=ConvLayer(4, dilation=2, padding=2)),
    "padding 0": Fusion(16, (4, 5), first=ConvLayer(4, padding=0), second=ConvLayer(4, padding=0)),
    "padding 0 then 1": Fusion(14, (4, 4), first=ConvLayer(4, padding=0), second=ConvLayer(4, padding=1)),
    "5x5 kernel": Fusion(14, (4, 4), second=ConvLayer(4, kernel=5, padding=2)),
    "relu inlined": Fusion(14, (5, 4), first=ConvLayer(4, relu=True)),
    "relu at the tile": Fusion(14, (5, 4), first=ConvLayer(4, relu=True), relu_at=True),
    "relu and pads at the tile": Fusion(14, (5, 4), first=ConvLayer(4, relu=True), relu_at=True,
                                        pads_at=True),
    "pads at the tile, filters inside": Fusion(15, (4, 6), filters_inside=True, pads_at=True),
    "relu and pads at y.inner": Fusion(12, (4, 4), at="y.inner", first=ConvLayer(4, relu=True),
                                       relu_at=True, pads_at=True),
    "stride 2, relu at the tile, pads inlined": Fusion(16, (3, 4), first=ConvLayer(4, relu=True),
                                                       second=ConvLayer(4, stride=2), relu_at=True),
}


@pytest.fixture(scope="module", params=list(FUSION_CASES), ids=list(FUSION_CASES))
def fused(request):
    case = FUSION_CASES[request.param]
    chain = declare(case)
    kernel = ts.build(schedule(chain, case), chain.args, name="fused")
    return case, chain, kernel


def test_fused_kernel_matches_numpy(fused):
    _, chain, kernel = fused
    check_chain(kernel, chain)


def test_conv1_is_produced_inside_the_chosen_loop(fused):
    case, chain, kernel = fused
    text = str(kernel.lowered)
    body = loop_body(text, case.at)
    assert "allocate conv1[" in body and "produce conv1" in body, text
    assert body.index("produce conv1") < body.index("conv2[0"), text   # before the consumer's stores
    staged = [t for t in ([chain.relus[0]] if case.relu_at else []) + (chain.pads if case.pads_at else [])
              if t is not None]
    for tensor in staged:
        assert f"produce {tensor.name}" in body, text
    for tensor in [t for t in chain.pads + chain.relus if t is not None and t not in staged]:
        assert f"produce {tensor.name}" not in text, text     # inlined


def test_conv1_buffer_has_the_footprint_extents(fused):
    """The buffer is the largest box of conv1 one iteration of the chosen loop reads."""
    case, chain, kernel = fused
    conv1, conv2 = chain.convs
    boxes = conv1_boxes(case, conv1.shape, conv2.shape)
    height, width = max(h for h, _ in boxes), max(w for _, w in boxes)
    expected = f"allocate conv1[float32 * 1 * {conv1.shape[1]} * {height} * {width}]"
    assert expected in str(kernel.lowered), str(kernel.lowered)


def test_redundancy_matches_a_hand_count(fused):
    case, chain, kernel = fused
    conv1, conv2 = chain.convs
    redundancy = kernel.lowered.redundancy
    expected = hand_count_conv1(case, conv1.shape, conv2.shape)
    assert redundancy["conv1"] == pytest.approx(expected)
    assert redundancy["conv1"] > 1
    note = f"# conv1: computes {expected:.2f}x its points (recomputed halo or re-executed per outer iteration)"
    assert note in str(kernel.lowered).split("def ")[0].splitlines()
    if case.relu_at:
        assert redundancy["relu1"] == pytest.approx(expected)


def test_hand_count_of_a_small_case():
    """12x12 output, 8x8 tiles, filters inside: conv1 boxes are 9 and 5 wide along each axis (clipped
    at the borders: rows 0..8 and 7..11), so conv1 computes (9 + 5)^2 / 12^2 of its points."""
    case = Fusion(12, (8, 8), filters_inside=True)
    chain = declare(case)
    lowered = ts.lower(schedule(chain, case), chain.args)
    assert hand_count_conv1(case, chain.convs[0].shape, chain.convs[1].shape) == pytest.approx(14 ** 2 / 144)
    assert lowered.redundancy == {"conv1": pytest.approx(14 ** 2 / 144)}


def test_unfused_pipeline_has_no_redundancy():
    case = Fusion(12, (4, 4), first=ConvLayer(4, relu=True))
    chain = declare(case)
    s = ts.create_schedule(chain.output.op)
    kernel = ts.build(s, chain.args, name="unfused")
    assert kernel.lowered.redundancy == {}
    assert not str(kernel.lowered).startswith("#")
    check_chain(kernel, chain)


def test_reference_convolution_matches_its_definition():
    rng = np.random.default_rng(3)
    data = rng.standard_normal((1, 2, 7, 8))
    weight = rng.standard_normal((3, 2, 3, 3))
    stride, padding, dilation = 2, 1, 2
    padded = np.pad(data, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    expected = np.zeros((1, 3, 3, 3))
    for f, y, x, c, dy, dx in itertools.product(range(3), range(3), range(3), range(2), range(3), range(3)):
        expected[0, f, y, x] += (padded[0, c, y * stride + dy * dilation, x * stride + dx * dilation]
                                 * weight[f, c, dy, dx])
    np.testing.assert_allclose(conv2d_ref(data, weight, stride, padding, dilation), expected, rtol=1e-12)


# the 56x56 case of the issue, with few channels --------------------------------------------------
def test_issue_example_8x8_tiles_of_56x56():
    case = Fusion(56, (8, 8), first=ConvLayer(2), second=ConvLayer(2), in_channels=2)
    chain = declare(case)
    kernel = ts.build(schedule(chain, case), chain.args, name="issue")
    extent = footprint_extent(8, case.second)
    assert extent == 10
    assert f"allocate conv1[float32 * 1 * 2 * {extent} * {extent}]" in str(kernel.lowered)
    check_chain(kernel, chain)


def test_fused_producer_loops_are_bounded_by_the_tile():
    """Each tile iterates only over its own box of conv1, not over the whole image with a guard."""
    case = Fusion(20, (8, 8), filters_inside=True)
    chain = declare(case)
    text = str(ts.lower(schedule(chain, case), chain.args))
    produce = text[text.index("produce conv1"):text.index("for y.inner")]
    assert "for y in [0, 20)" not in produce and "for x in [0, 20)" not in produce, text


# three-stage chains --------------------------------------------------------------------------------
def declare_blur(height: int, width: int):
    """Halide's separable 3x3 box blur; the input is read through a copy stage ``input_copy``."""
    data = ts.placeholder((height + 2, width + 2), name="data")
    copy = ts.compute(data.shape, lambda y, x: data[y, x] * 1.0, name="input_copy")
    blur_x = ts.compute((height + 2, width), lambda y, x: (copy[y, x] + copy[y, x + 1] + copy[y, x + 2]) / 3.0,
                        name="blur_x")
    blur_y = ts.compute((height, width),
                        lambda y, x: (blur_x[y, x] + blur_x[y + 1, x] + blur_x[y + 2, x]) / 3.0, name="blur_y")
    return data, copy, blur_x, blur_y


def blur_ref(data: np.ndarray) -> np.ndarray:
    d = data.astype(np.float64)
    bx = (d[:, :-2] + d[:, 1:-1] + d[:, 2:]) / 3
    return (bx[:-2] + bx[1:-1] + bx[2:]) / 3


@pytest.mark.parametrize("tile, copy_level", [((8, 8), "y"), ((5, 7), "y"), ((4, 16), "x"), ((6, 6), "root")])
def test_separable_blur_three_stages(tile, copy_level):
    height, width = 18, 16
    data, copy, blur_x, blur_y = declare_blur(height, width)
    s = ts.create_schedule(blur_y.op)
    y, x = s[blur_y].op.axis
    yo, xo, yi, xi = s[blur_y].tile(y, x, *tile)
    s[blur_y].vectorize(xi)
    s[blur_y].parallel(yo)
    s[blur_x].compute_at(s[blur_y], xo)
    by, bx = s[blur_x].op.axis
    if copy_level != "root":
        s[copy].compute_at(s[blur_x], by if copy_level == "y" else bx)
    kernel = ts.build(s, [data, blur_y], name="blur")
    text = str(kernel.lowered)
    blur_x_rows = min(tile[0] + 2, height + 2)
    assert f"allocate blur_x[float32 * {blur_x_rows} * {min(tile[1], width)}]" in text, text
    if copy_level == "y":
        assert f"allocate input_copy[float32 * 1 * {min(tile[1], width) + 2}]" in loop_body(text, "y"), text
    rng = np.random.default_rng(5)
    image = rng.standard_normal((height + 2, width + 2)).astype(np.float32)
    np.testing.assert_allclose(kernel(image), blur_ref(image), rtol=RTOL, atol=ATOL)


def three_conv_chain() -> ConvChain:
    return declare_conv_chain(2, 16, [ConvLayer(3), ConvLayer(4, relu=True), ConvLayer(3)])


def tile_last_conv(chain: ConvChain, tile: tuple[int, int]):
    """A schedule with the last convolution tiled, its filter loop inside the tile; the tile loops."""
    s = ts.create_schedule(chain.output.op)
    last = s[chain.convs[-1]]
    n, f, y, x = last.op.axis
    yo, xo, yi, xi = last.tile(y, x, *tile)
    last.reorder(n, yo, xo, f, yi, xi)
    return s, yo, xo


def test_conv_chain_of_three_nested_compute_at():
    """conv1 at a row loop of conv2, conv2 at the tile loop of conv3: two levels of halo."""
    chain = three_conv_chain()
    conv1, conv2, conv3 = chain.convs
    s, _, xo = tile_last_conv(chain, (6, 5))
    s[conv2].compute_at(s[conv3], xo)
    s[chain.relus[1]].compute_inline()
    _, _, y2, _ = s[conv2].op.axis
    s[conv1].compute_at(s[conv2], y2)
    for pad in chain.pads:
        s[pad].compute_inline()
    kernel = ts.build(s, chain.args, name="three")
    text = str(kernel.lowered)
    assert "allocate conv2[float32 * 1 * 4 * 8 * 7]" in loop_body(text, "x.outer"), text
    assert "allocate conv1[float32 * 1 * 3 * 3 * 9]" in loop_body(text, "y"), text
    assert set(kernel.lowered.redundancy) == {"conv1", "conv2"}
    assert kernel.lowered.redundancy["conv1"] > kernel.lowered.redundancy["conv2"] > 1
    check_chain(kernel, chain)


def test_conv_chain_of_three_at_two_levels_of_one_consumer():
    """conv1 at conv3's row-tile loop, conv2 at conv3's column-tile loop, relu at conv2's level."""
    chain = three_conv_chain()
    conv1, conv2, conv3 = chain.convs
    s, yo, xo = tile_last_conv(chain, (5, 6))
    s[conv1].compute_at(s[conv3], yo)
    s[conv2].compute_at(s[conv3], xo)
    s[chain.relus[1]].compute_at(s[conv3], xo)
    for pad in chain.pads:
        s[pad].compute_inline()
    kernel = ts.build(s, chain.args, name="three_levels")
    text = str(kernel.lowered)
    row_tile = loop_body(text, "y.outer")
    assert row_tile.index("produce conv1") < row_tile.index("for x.outer"), text
    assert "allocate conv1[float32 * 1 * 3 * 9 * 16]" in row_tile, text
    assert "produce conv2" in loop_body(text, "x.outer"), text
    check_chain(kernel, chain)


def test_chain_reference_is_layer_by_layer():
    chain = three_conv_chain()
    rng = np.random.default_rng(0)
    data = rng.standard_normal((1, 2, 16, 16))
    weights = [rng.standard_normal(tuple(int(d) for d in w.shape)) for w in chain.weights]
    step = conv2d_ref(conv2d_ref(data, weights[0], padding=1), weights[1], padding=1)
    np.testing.assert_allclose(chain_ref(chain.layers, data, *weights),
                               conv2d_ref(np.maximum(step, 0), weights[2], padding=1))


def test_fused_kernel_with_parallel_and_vectorized_loops():
    case = replace(FUSION_CASES["7x5 tiles, not dividing"], filters_inside=True)
    chain = declare(case)
    s = schedule(chain, case)
    conv1, conv2 = chain.convs
    n, f, y, x = s[conv2].op.axis
    yo = s[conv2].leaf_iter_vars[1]
    s[conv2].parallel(yo)
    xi = [v for v in s[conv2].leaf_iter_vars if v.name == "x.inner"][0]
    s[conv2].vectorize(xi)
    s[conv1].vectorize(s[conv1].op.axis[3])
    kernel = ts.build(s, chain.args, name="fused_parallel")
    text = str(kernel.lowered)
    assert "parallel for y.outer" in text and "vectorized for x.inner" in text, text
    check_chain(kernel, chain)


def test_conv1_at_a_fused_parallel_loop_of_three_axes():
    """conv2's filter and tile loops fused into one parallel loop; conv1 is computed per fused iteration."""
    case = Fusion(13, (5, 6))
    chain = declare(case)
    conv1, conv2 = chain.convs
    s = ts.create_schedule(chain.output.op)
    n, f, y, x = s[conv2].op.axis
    yo, xo, yi, xi = s[conv2].tile(y, x, *case.tile)
    fused = s[conv2].fuse(f, yo, xo)
    assert fused.name == "f.y.outer.fused.x.outer.fused"
    s[conv2].parallel(fused)
    s[conv1].compute_at(s[conv2], fused)
    for pad in chain.pads:
        s[pad].compute_inline()
    kernel = ts.build(s, chain.args, name="fused_loop")
    text = str(kernel.lowered)
    body = loop_body(text, fused.name)
    assert "parallel for f.y.outer.fused.x.outer.fused in [0, 36)" in text, text      # 4 filters x 3 x 3 tiles
    assert "allocate conv1[float32 * 1 * 4 * 7 * 8]" in body, text
    assert kernel.lowered.redundancy["conv1"] == pytest.approx(hand_count_conv1(case, conv1.shape, conv2.shape))
    check_chain(kernel, chain)
