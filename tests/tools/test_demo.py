"""The demo (``python -m tesched demo``): its kernels agree with NumPy on small sizes, its NumPy reference
agrees with a direct loop, and the command prints the fused IR and the table."""
import itertools

import numpy as np
import pytest

from tesched.__main__ import main
from tesched.tools import demo

SIZES = demo.QUICK


def direct_conv2d(data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """3x3 convolution, zero padding 1, by its definition (slow; tiny inputs only)."""
    batch, channels, height, width = data.shape
    out = np.zeros((batch, weight.shape[0], height, width), np.float64)
    for n, f, y, x, c, dy, dx in itertools.product(range(batch), range(weight.shape[0]), range(height),
                                                   range(width), range(channels), range(3), range(3)):
        yy, xx = y + dy - 1, x + dx - 1
        if 0 <= yy < height and 0 <= xx < width:
            out[n, f, y, x] += data[n, c, yy, xx] * weight[f, c, dy, dx]
    return out


def test_conv2d_reference_matches_definition():
    rng = np.random.default_rng(1)
    data = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    weight = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    np.testing.assert_allclose(demo.conv2d_reference(data, weight), direct_conv2d(data, weight),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("variant", demo.CONV_VARIANTS)
def test_conv_relu_variant_matches_numpy(variant):
    rng = np.random.default_rng(2)
    data = rng.standard_normal((SIZES.batch, SIZES.channels, SIZES.height, SIZES.width), dtype=np.float32)
    weight = rng.standard_normal((SIZES.channels, SIZES.channels, 3, 3), dtype=np.float32)
    kernel = demo.build_conv_relu(SIZES, variant)
    np.testing.assert_allclose(kernel(data, weight), demo.conv_relu_reference(data, weight),
                               rtol=1e-4, atol=1e-4)


def test_fused_variants_produce_conv_inside_the_row_tile_loop():
    for variant in demo.CONV_VARIANTS[1:]:
        ir = str(demo.build_conv_relu(SIZES, variant).lowered)
        tile_loop = ir.index("for y.outer")
        assert ir.index("produce relu") < tile_loop < ir.index("produce conv"), ir
    unfused = str(demo.build_conv_relu(SIZES, "unfused").lowered)
    assert unfused.index("produce conv") < unfused.index("produce relu"), unfused


def test_pad_inlined_has_no_pad_stage_and_pad_at_tile_has_one():
    inlined = str(demo.build_conv_relu(SIZES, "fused, pad inlined").lowered)
    at_tile = str(demo.build_conv_relu(SIZES, "fused, pad at tile").lowered)
    assert "produce pad" not in inlined
    assert at_tile.index("for y.outer") < at_tile.index("produce pad")


def test_unknown_conv_variant_is_rejected():
    net = demo.declare_conv_relu(SIZES)
    with pytest.raises(ValueError, match="unknown conv variant"):
        demo.schedule_conv_relu(net, "fused sideways")


def test_matmul_with_non_dividing_tiles_matches_numpy():
    assert SIZES.n % demo.MATMUL_TILE_COLUMNS != 0  # partial tiles are guarded, and checked here
    rows = demo.run_matmul(SIZES, np.random.default_rng(3))
    assert [row.label for row in rows] == [f"matmul {SIZES.n}x{SIZES.n}, NumPy",
                                           f"matmul {SIZES.n}x{SIZES.n}, tesched"]


def test_format_table_ratio_is_baseline_over_row():
    rows = [demo.Timing("a, base", median=2.0, spread=0.1, best=1.0, flops=4e9, baseline="a, base"),
            demo.Timing("a, fast", median=0.5, spread=0.02, best=0.25, flops=4e9, baseline="a, base")]
    lines = demo.format_table(rows).splitlines()
    assert lines[2].split()[-3:] == ["1.00x", "vs", "base"]
    assert lines[3].split()[-3:] == ["4.00x", "vs", "base"]
    assert "8.0" in lines[3]  # GFLOP/s at the median: 4e9 / 0.5 s
    assert "20.000" in lines[3]  # the spread, in ms


def _row(variant: str, median: float, spread: float = 0.0) -> demo.Timing:
    return demo.Timing(f"conv3x3+relu 1x4x8x8, {variant}", median, spread, median, 1e6,
                       "conv3x3+relu 1x4x8x8, unfused")


def test_every_row_is_explained_and_the_inlined_padding_says_why_it_loses():
    unfused = _row("unfused", 1.0)
    inlined = demo.explain(_row("pad inlined", 5.0), unfused)
    assert inlined.startswith("loses") and "9 times per output" in inlined and "SIMD" in inlined
    assert demo.explain(_row("pad inlined", 0.5), unfused).startswith("faster than unfused")
    for variant in ("NumPy", "unfused", "pad at tile"):
        assert len(demo.explain(_row(variant, 1.0), unfused)) > 40


def test_a_busy_machine_is_reported():
    assert demo.busy_note([_row("unfused", 1.0, 0.1)]) is None
    note = demo.busy_note([_row("unfused", 1.0, 0.1), _row("pad at tile", 1.0, 0.9)])
    assert note is not None and "busy" in note and "pad at tile" in note and "unfused" not in note


def test_demo_command_prints_fused_ir_and_table(capsys):
    assert main(["demo", "--quick"]) == 0
    printed = capsys.readouterr().out
    assert "produce conv" in printed
    for variant in demo.CONV_VARIANTS:
        assert f", {variant} " in printed
    assert f"matmul {SIZES.n}x{SIZES.n}, tesched" in printed
    explained = printed.split("Why each row takes its time:")[1]
    assert explained.count("\n- ") == len(demo.CONV_VARIANTS) + 3   # every row of the table


def test_command_without_subcommand_exits_with_usage(capsys):
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2
    assert "usage" in capsys.readouterr().err
