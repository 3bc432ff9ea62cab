"""Tests of auto_schedule and explain_schedule: every schedule it emits is legal and computes what the
pipeline declares (checked against NumPy), its decisions come with reasons, and stages it cannot model
keep the user's schedule."""
import importlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tesched as ts
import tesched.nn as nn
from tesched.autoschedule.machine import Machine
from tesched.autoschedule.pipeline import scheduled_by_user
from tesched.te.tensor import PlaceholderOp
from tesched.poly import analysis
from tesched.recipes import image_apps
from tesched.recipes.local_laplacian import local_laplacian
from tesched.recipes.pyramid import interpolate
from tests.autoschedule.helpers import (bilateral_slice, blur, data, histogram, histogram_grid, interpolate_reference,
                                        local_laplacian_reference, lut_curve, matmul_relu, pipelines, run,
                                        softmax_matmul)
from targets import AVX512, pinned


@pytest.mark.parametrize("make", [blur, matmul_relu, softmax_matmul, histogram])
def test_auto_schedule_computes_the_pipeline(make):
    inputs, outputs, reference = make()
    s = ts.auto_schedule(outputs)
    ts.check_schedule(s)
    kernel = ts.build(s, inputs + outputs)
    arrays = [data(*[int(d) for d in t.shape], seed=k) for k, t in enumerate(inputs)]
    got, = run(kernel, inputs, outputs, arrays)
    np.testing.assert_allclose(got, reference(*[a.astype(np.float64) for a in arrays]), rtol=1e-4, atol=1e-4)


def test_blur_fuses_the_first_pass_with_its_halo():
    inputs, outputs, _ = blur(64, 64)
    s = ts.auto_schedule(outputs)
    text = ts.explain_schedule(s)
    assert "bx: computed at" in text and "x its points computed (exact count, halos included)" in text
    assert "by: stored whole" in text and "vectorized" in text


def test_matmul_gets_a_register_tile_and_its_reasons():
    inputs, outputs, _ = matmul_relu()
    text = ts.explain_schedule(ts.auto_schedule(outputs))
    assert "the anchor of D" in text and "register tile" in text and "FMAs per load" in text


def test_nn_pipeline_with_padding_and_several_outputs():
    x = ts.placeholder((1, 8, 10, 10), name="x")
    w = ts.placeholder((8, 8, 3, 3), name="w")
    conv = nn.conv2d(x, w, padding=1)
    relu = nn.relu(conv)
    total = nn.add(relu, 1.0)
    s = ts.auto_schedule([relu, total])
    text = ts.explain_schedule(s)
    assert "pad: " in text and "guards a load with a select" in text
    kernel = ts.build(s, [x, w, relu, total])
    xa, wa = data(1, 8, 10, 10), data(8, 8, 3, 3, seed=1)
    r, t = kernel(xa, wa)
    xp = np.pad(xa[0], ((0, 0), (1, 1), (1, 1)))
    ref = np.einsum("ocij,cijhw->ohw", wa, np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(1, 2))
                    .transpose(0, 3, 4, 1, 2))[None]
    np.testing.assert_allclose(r, np.maximum(ref, 0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(t, np.maximum(ref, 0) + 1, rtol=1e-4, atol=1e-4)


@pytest.mark.usefixtures("host_target")
def test_lstm_cell_from_the_operator_library():
    hidden = 32                       # reductions of 32: two vectors of partial sums
    x, h, c = (ts.placeholder((1, hidden), name=n) for n in "xhc")
    wi, wh = (ts.placeholder((4 * hidden, hidden), name=n) for n in ("wi", "wh"))
    b = ts.placeholder((4 * hidden,), name="b")
    h2, c2 = nn.lstm_cell(x, h, c, wi, wh, b)
    s = ts.auto_schedule([h2, c2])
    assert "rfactor" in ts.explain_schedule(s)
    arrays = [data(1, hidden, seed=1), data(1, hidden, seed=2), data(1, hidden, seed=3),
              data(4 * hidden, hidden, seed=4), data(4 * hidden, hidden, seed=5), data(4 * hidden, seed=6)]
    got = ts.build(s, [x, h, c, wi, wh, b, h2, c2])(*arrays)
    want = ts.build(ts.create_schedule([h2.op, c2.op]), [x, h, c, wi, wh, b, h2, c2])(*arrays)
    for g, w_ in zip(got, want):
        np.testing.assert_allclose(g, w_, rtol=1e-5, atol=1e-6)


def test_single_values_and_single_rows():
    A = ts.placeholder((64,), name="A")
    k = ts.reduce_axis((0, 64), name="k")
    total = ts.compute((), lambda: ts.sum(A[k], axis=k), name="total")
    twice = ts.compute((), lambda: total[()] * 2.0, name="twice")
    row = ts.compute((1,), lambda i: ts.sum(A[k] * A[k], axis=k), name="row")
    a = data(64)
    for out, want in ((total, a.sum()), (twice, 2 * a.sum()), (row, [(a * a).sum()])):
        s = ts.auto_schedule(out)
        assert "rejected" not in ts.explain_schedule(s)
        np.testing.assert_allclose(ts.build(s, [A, out])(a), want, rtol=1e-5)


def test_user_scheduled_and_tensorized_stages_are_kept():
    src = r"""
static void dot8(const float *a, int64_t sa, const float *b, int64_t sb, float *c, int64_t sc) {
  float acc = 0;
  for (int k = 0; k < 8; k++) acc += a[k * sa] * b[k * sb];
  c[0] = acc;
}
"""
    a, b = ts.placeholder((8,), name="a"), ts.placeholder((8,), name="b")
    k = ts.reduce_axis((0, 8), name="k")
    c = ts.compute((1,), lambda i: ts.sum(a[k] * b[k], axis=k), name="c")
    dot = ts.decl_tensor_intrin(c.op, ts.CIntrinsic(source=src, body="dot8"), name="dot8")
    X, Y = ts.placeholder((16, 8), name="X"), ts.placeholder((16, 8), name="Y")
    P = ts.compute((16, 8), lambda i, r: X[i, r] * 2.0, name="P")
    r = ts.reduce_axis((0, 8), name="r")
    Z = ts.compute((16, 1), lambda i, j: ts.sum(P[i, r] * Y[i, r], axis=r), name="Z")
    O = ts.compute((16, 1), lambda i, j: ts.maximum(Z[i, j], 0.0), name="O")
    s = ts.create_schedule(O.op)
    s[Z].tensorize(Z.op.axis[1], dot)
    with ts.Target(AVX512):                 # the rows vectorized depend on the target's lanes
        result = ts.auto_schedule(s)
    assert result is s
    text = ts.explain_schedule(s)
    assert "Z: kept as scheduled" in text and "it is tensorized" in text
    assert text.splitlines()[1:4] == ["left as declared: 2 stage(s):", "    - Z: kept as scheduled: it is tensorized",
                                      "    - O: rows of 1, too short to vectorize"]
    assert "P: stored whole" in text and "read by a stage kept as scheduled" in text
    xa, ya = data(16, 8), data(16, 8, seed=1)
    out = ts.build(s, [X, Y, O])(xa, ya)
    np.testing.assert_allclose(out[:, 0], np.maximum((2 * xa * ya).sum(1), 0), rtol=1e-5, atol=1e-6)


def test_explain_and_arguments():
    inputs, outputs, _ = blur()
    assert "no recorded decisions" in ts.explain_schedule(ts.create_schedule(outputs[0].op))
    with pytest.raises(TypeError, match="explain_schedule takes a Schedule"):
        ts.explain_schedule(outputs[0])
    with pytest.raises(TypeError, match="outputs must be tensors"):
        ts.auto_schedule([3])
    with pytest.raises(TypeError, match="target must be"):
        ts.auto_schedule(outputs, target=42)
    narrow = Machine(vector_bytes=16, threads=1, registers=16, l1_bytes=32 << 10, l2_bytes=256 << 10,
                     l3_bytes=4 << 20)
    assert "128-bit SIMD" in ts.explain_schedule(ts.auto_schedule(outputs, target=narrow))


def declared_at_top(text: str) -> dict[str, str]:
    """The stages ``explain_schedule`` lists first as left as declared, with why."""
    lines = text.splitlines()
    count = int(lines[1].split(": ")[1].split()[0])
    return dict(line[len("    - "):].split(": ", 1) for line in lines[2:2 + count])


def untouched(s: ts.Schedule) -> set[str]:
    """The compute stages of ``s`` whose loops are as declared: none split, reordered, annotated or placed,
    and no stage computed in them (a member, a partial reduction)."""
    hosts = {id(st.attach_stage) for st in s.stages if st.attach_stage is not None}
    return {st.op.name for st in s.stages
            if not isinstance(st.op, PlaceholderOp) and not scheduled_by_user(st) and id(st) not in hosts}


@settings(max_examples=8, deadline=None)
@given(pipelines())
def test_random_pipelines_stay_correct(pipeline):
    A, out, ref = pipeline
    s = ts.auto_schedule(out)
    assert set(declared_at_top(ts.explain_schedule(s))) == untouched(s)
    a = data(*[int(d) for d in A.shape])
    got = ts.build(s, [A, out])(a)
    np.testing.assert_allclose(got, ref(a.astype(np.float64)), rtol=1e-4, atol=1e-4)


def test_small_scatters_stay_serial_gathers_and_scans_are_scheduled(rand):
    img = ts.placeholder((12, 9), "int32", name="img")
    ry, rx = ts.reduce_axis((0, 12), name="ry"), ts.reduce_axis((0, 9), name="rx")
    hist = ts.scatter_add((8,), img[ry, rx], 1.0, [ry, rx], name="hist")
    A = ts.placeholder((8,), name="A")
    P = ts.compute((8,), lambda i: A[i] * 2.0, name="P")
    out = ts.compute((8,), lambda i: hist[i] + P[(i * 3) % 8], name="out")
    s = ts.auto_schedule(out)
    assert "hist: stored whole\n    - a scatter of 108 points into 8 elements: stored whole\n    - serial" in \
        ts.explain_schedule(s)
    image, a = rand((12, 9), "int32", 0, 7), rand((8,))
    expected = np.bincount(image.ravel(), minlength=8) + 2 * a[(np.arange(8) * 3) % 8]
    np.testing.assert_allclose(ts.build(s, [img, A, out])(image, a), expected, rtol=1e-6)
    X = ts.placeholder((6, 5), name="X")
    state = ts.placeholder((6, 5), name="state")
    init = ts.compute((1, 5), lambda t, i: X[t, i], name="init")
    update = ts.compute((6, 5), lambda t, i: state[t - 1, i] * 0.5 + X[t, i], name="update")
    res = ts.scan(init, update, state, name="ema")
    x = rand((6, 5))
    expected = x.copy()
    for t in range(1, 6):
        expected[t] = expected[t - 1] * 0.5 + x[t]
    np.testing.assert_allclose(ts.build(ts.auto_schedule(res), [X, res])(x), expected, rtol=1e-5)


def test_histogram_grid_reads_each_cell_once_for_all_bins():
    inputs, outputs, reference = histogram_grid(256, 8, 4)
    with ts.Target(AVX512):                 # the decisions below are those for 16 float lanes
        s = ts.auto_schedule(outputs)
    text = ts.explain_schedule(s)
    assert "tile loops over z innermost: no input of grid depends on them" in text
    assert "bin: computed at outer loop" in text and "rfactor 8" in text
    a = np.random.default_rng(0).uniform(0, 0.999, (256, 256)).astype(np.float32)
    _, kernel = pinned(lambda: ts.build(s, inputs + outputs))
    got, = run(kernel, inputs, outputs, [a])
    np.testing.assert_allclose(got, reference(a.astype(np.float64)), rtol=1e-4, atol=1e-3)


@pytest.mark.usefixtures("host_target")
def test_large_matmul_packs_its_strided_panel():
    _, outputs, _ = matmul_relu(1024, 1024, 1024)
    text = ts.explain_schedule(ts.auto_schedule(outputs))
    assert "packed panel" in text and "pack B (1024x" in text


@pytest.mark.parametrize("levels, shape", [(10, (64, 48)), (4, (40, 72))])
def test_pyramid_decides_with_work_bounded_by_its_stages(levels, shape, monkeypatch):
    """A deep pyramid (46 stages at 10 levels) is decided with a number of tile-region computations and
    of read boxes linear in its stages (each a fixed number of NumPy interval operations), and its
    schedule computes the reference."""
    work = {"regions": 0, "boxes": 0}

    def counted(name, fn):
        def call(*args, **kwargs):
            work[name] += 1
            return fn(*args, **kwargs)
        return call

    monkeypatch.setattr(analysis.TileFootprints, "regions", counted("regions", analysis.TileFootprints.regions))
    monkeypatch.setattr(analysis, "_read_box", counted("boxes", analysis._read_box))
    A = ts.placeholder(shape, name="A")
    out = interpolate(A, levels)
    s = ts.auto_schedule(out)
    stages = len(s.stages)
    assert 0 < work["regions"] <= 4 * stages and work["boxes"] <= 20 * stages, work
    text = ts.explain_schedule(s)
    assert "vectorized" in text
    a = data(*shape)
    np.testing.assert_allclose(ts.build(s, [A, out])(a), interpolate_reference(a.astype(np.float64), levels),
                               rtol=1e-5, atol=1e-5)


def test_a_lookup_table_with_pow_and_its_gather_are_scheduled():
    inputs, outputs, reference = lut_curve(24, 40)
    s = ts.auto_schedule(outputs)
    text = ts.explain_schedule(s)
    assert "left as declared: 0 stage(s)" in text and "kept as scheduled" not in text, text
    assert "curve: stored whole, tiles [256], vectorized" in text and "toned: stored whole" in text
    gray = (np.arange(24 * 40, dtype=np.float64).reshape(24, 40) % 300 - 20.25) / 255.0     # away from .5 ties
    img = ((gray - 0.1) / 0.8).astype(np.float32)
    got, = run(ts.build(s, inputs + outputs), inputs, outputs, [img])
    np.testing.assert_allclose(got, reference(img), rtol=1e-5, atol=1e-6)


def test_a_bilateral_grid_slice_is_tiled_around_its_gather():
    inputs, outputs, reference = bilateral_slice(48, 40)
    s = ts.auto_schedule(outputs)
    text = ts.explain_schedule(s)
    assert "left as declared: 0 stage(s)" in text and "rejected" not in text, text
    assert "blurx: computed at outer loop" in text and "slice: stored whole, tiles" in text
    assert "vectorized" in text.split("slice:")[1]
    rng = np.random.default_rng(3)
    img = rng.uniform(-0.2, 1.2, (48, 40)).astype(np.float32)
    grid = rng.uniform(0, 1, (7, 6, 8)).astype(np.float32)
    got, = run(ts.build(s, inputs + outputs), inputs, outputs, [img, grid])
    np.testing.assert_allclose(got, reference(img, grid), rtol=1e-5, atol=1e-5)


def test_a_refused_plan_is_repaired_at_the_stage_the_check_names(monkeypatch):
    """The legality check's error names a stage: that stage alone is stored whole, the others keep their
    decisions, and explain_schedule lists it first with the reason."""
    inputs, outputs, reference = blur(20, 24)
    good = ts.explain_schedule(ts.auto_schedule(outputs))
    assert "left as declared: 0 stage(s)" in good.splitlines()[1]
    auto = importlib.import_module("tesched.autoschedule.auto")
    real = auto.apply_plan
    refused = []

    def refuse_bx_once(sch, plan):
        real(sch, plan)
        if not refused and plan.by_index()[1].placement == "at":
            refused.append(True)
            raise ts.ScheduleError("stage bx is computed at a tile of by, but by has no outer loop (tile [])")

    monkeypatch.setattr(auto, "apply_plan", refuse_bx_once)
    s = ts.auto_schedule(outputs)
    text = ts.explain_schedule(s)
    assert text.splitlines()[1] == "left as declared: 1 stage(s):"
    assert text.splitlines()[2].startswith("    - bx: simplified: the schedule first chosen failed")
    assert "by: stored whole, tiles" in text and "rejected by the dependence check" in text
    a = data(22, 26)
    np.testing.assert_allclose(ts.build(s, inputs + outputs)(a), reference(a.astype(np.float64)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bins, how", [(32, "2 private copies"), (1 << 15, "atomic updates")])
def test_histograms_scatter_in_parallel_into_private_copies_or_atomically(bins, how):
    """A weighted histogram of a computed bin: the bin is computed whole in vectorized loops, the scatter's
    first loop runs on both threads, into one copy of the histogram each when it is small, else atomically."""
    n = 512
    (img,), hist = image_apps.histogram(n, n, bins)
    two = Machine(vector_bytes=32, threads=2, registers=16, l1_bytes=32 << 10, l2_bytes=1 << 20, l3_bytes=8 << 20)
    s = ts.auto_schedule(hist, target=two)
    text = ts.explain_schedule(s)
    assert f"hist: stored whole, {how}" in text and "bin: stored whole, tiles [1, 512], parallel x1, vectorized" in text
    assert "(a scatter's loops stay scalar" in text
    a = np.random.default_rng(2).uniform(-0.1, 1.1, (n, n)).astype(np.float32)
    index = (np.clip(a, 0, 1) * np.float32(bins - 1) + np.float32(0.5)).astype(np.int32)
    np.testing.assert_allclose(ts.build(s, [img, hist])(a), np.bincount(index.ravel(), weights=a.ravel(),
                               minlength=bins), rtol=1e-4, atol=1e-3)


def test_stages_calling_pure_extern_functions_are_scheduled():
    source = "static inline float soft_clip(float x) { return x / (1.0f + fabsf(x)); }"
    A = ts.placeholder((34, 66), name="A")
    B = ts.compute((34, 66), lambda i, j: ts.call_pure_extern("float32", "soft_clip", A[i, j], source=source),
                   name="B")
    C = ts.compute((32, 64), lambda i, j: B[i, j] + B[i + 1, j + 1] + B[i + 2, j + 2], name="C")
    s = ts.auto_schedule(C)
    assert "external functions" not in ts.explain_schedule(s)
    a = data(34, 66)
    b = a / (1 + np.abs(a))
    np.testing.assert_allclose(ts.build(s, [A, C])(a), b[:32, :64] + b[1:33, 1:65] + b[2:, 2:], rtol=1e-5)


def test_an_extern_stage_is_kept_whole_and_its_neighbours_scheduled():
    """An extern stage (one C call) is left as declared, its pointwise producer is not inlined into it,
    and its stencil reader is scheduled."""
    source = "void flip_rows(const float *a, float *b) { for (int i = 0; i < 34 * 66; i++) b[i] = a[34 * 66 - 1 - i]; }"
    A = ts.placeholder((34, 66), name="A")
    P = ts.compute((34, 66), lambda i, j: A[i, j] * 2.0 + 1.0, name="P")
    E = ts.extern((34, 66), [P], name="E", fname="flip_rows", source=source)
    C = ts.compute((32, 64), lambda i, j: E[i, j] + E[i + 1, j + 1] + E[i + 2, j + 2], name="C")
    s = ts.auto_schedule(C)
    text = ts.explain_schedule(s)
    assert "extern stage, one call of C function flip_rows" in text
    a = data(34, 66)
    e = (a * 2 + 1)[::-1, ::-1]
    np.testing.assert_allclose(ts.build(s, [A, C])(a), e[:32, :64] + e[1:33, 1:65] + e[2:, 2:], rtol=1e-5)


def test_local_laplacian_is_tiled_around_its_gathers_with_work_bounded_by_its_stages(monkeypatch):
    """A local Laplacian filter (pyramids of 3-D remapped levels, a per-pixel gather of the nearest
    processed level, a remapping table read at a float-derived index): every stage is scheduled, the body
    of each is expanded with its inlined stages a bounded number of times (not once per question asked
    about it), its gathers are proved in range without run-time checks, and it computes the reference."""
    expansions = []
    real = analysis.inlined_body
    monkeypatch.setattr(analysis, "inlined_body", lambda *a: expansions.append(a[0].name) or real(*a))
    A = ts.placeholder((40, 36), name="A")
    out = local_laplacian(A, levels=3, k=3, alpha=0.5)
    s = ts.auto_schedule(out)
    stages = len(s.stages)
    assert stages == 11 * 3 - 7 and len(expansions) <= 3 * stages, (stages, len(expansions))
    text = ts.explain_schedule(s)
    assert "left as declared: 0 stage(s)" in text and "rejected" not in text, text
    line = next(t for t in text.splitlines() if t.startswith("outgpyr0: "))
    assert line.startswith("outgpyr0: stored whole, tiles") and line.endswith("vectorized"), line
    f = ts.build(s, [A, out])
    assert "checked" not in str(f.lowered)
    a = np.random.default_rng(7).uniform(-0.1, 1.1, (40, 36)).astype(np.float32)
    np.testing.assert_allclose(f(a), local_laplacian_reference(a, 3, 3, 0.5), rtol=1e-4, atol=1e-5)


WIDE = Machine(vector_bytes=64, threads=2, registers=32, l1_bytes=32 << 10, l2_bytes=1 << 20, l3_bytes=8 << 20)


def test_histogram_equalization_scatters_scans_and_gathers_without_checks():
    """A scatter, a cumulative sum as short as one vector (its whole output one register tile: it
    accumulates in place, no write cache at a tile loop it does not have), then a gather of it at each
    pixel's bin computed in a stage of its own: every stage scheduled but the scatter, too small to share
    (serial, named first), no run-time index check."""
    (img,), out = image_apps.equalize(48, 40, 16)
    s = ts.auto_schedule(out, target=WIDE)
    text = ts.explain_schedule(s)
    assert text.splitlines()[1:3] == ["left as declared: 1 stage(s):", "    - hist: serial: too little work (or too "
                                      "short a first loop) to share between threads"] and "rejected" not in text, text
    assert "cdf: stored whole, tiles [16], vectorized, register tile" in text and "accumulates in place" in text
    assert "checked" not in str(ts.lower(s, [img, out]))
    a = np.random.default_rng(8).uniform(-0.1, 1.1, (48, 40)).astype(np.float32)
    index = (np.clip(a, 0, 1) * np.float32(15) + np.float32(0.5)).astype(np.int32)
    cdf = np.cumsum(np.bincount(index.ravel(), minlength=16))
    np.testing.assert_allclose(ts.build(s, [img, out])(a), cdf[index] / (48 * 40), rtol=1e-6)


@pytest.mark.parametrize("n", [16, 9])
def test_a_reduction_read_by_a_one_tile_stage_is_stored_whole_with_loops_of_its_own(n):
    """relu(W @ x) whose output is one vector: the product cannot be computed at a tile of the relu (it
    has no tile loop), so it is stored whole with its own loops, not given up on after a failed check."""
    W = ts.placeholder((n, 64), name="W")
    x = ts.placeholder((64,), name="x")
    k = ts.reduce_axis((0, 64), name="k")
    y = ts.compute((n,), lambda i: ts.sum(W[i, k] * x[k], axis=k), name="y")
    r = ts.compute((n,), lambda i: ts.maximum(y[i], 0.0), name="r")
    s = ts.auto_schedule(r, target=WIDE)
    text = ts.explain_schedule(s)
    assert "left as declared: 0 stage(s)" in text and "rejected" not in text, text
    assert f"stored whole: r is one tile (tiles [{n}])" in text and "y: stored whole, tiles" in text
    w, v = data(n, 64), data(64, seed=1)
    np.testing.assert_allclose(ts.build(s, [W, x, r])(w, v), np.maximum(w @ v, 0), rtol=1e-4, atol=1e-5)


def test_explain_names_first_every_stage_whose_loops_stay_as_declared():
    """Stages too small to tile, vectorize or share (a reduction over an axis of one, a 3 x 3 map, a
    serial scatter) are listed at the top with their reason, as is a stage kept as the user scheduled it;
    the listed stages are exactly those the applied schedule leaves untouched (besides the kept one)."""
    A = ts.placeholder((4, 3), name="A")
    k = ts.reduce_axis((0, 3), name="k")
    R = ts.compute((4, 1), lambda i, j: ts.sum(A[i, k], axis=k), name="R")
    C = ts.placeholder((3, 3), name="C")
    D = ts.compute((3, 3), lambda i, j: C[i, j] * 2.0, name="D")
    img = ts.placeholder((5, 4), "int32", name="img")
    ry, rx = ts.reduce_axis((0, 5), name="ry"), ts.reduce_axis((0, 4), name="rx")
    H = ts.scatter_add((8,), img[ry, rx], 1.0, [ry, rx], name="H")
    B = ts.placeholder((64, 64), name="B")
    K = ts.compute((64, 64), lambda i, j: B[i, j] + 1.0, name="K")
    E = ts.compute((64, 64), lambda i, j: K[i, j] * 3.0, name="E")
    s = ts.create_schedule([R.op, D.op, H.op, E.op])
    s[K].split(K.op.axis[1], 16)
    with ts.Target(AVX512):                 # which rows are too short to vectorize depends on the lanes
        ts.auto_schedule(s)
    declared = declared_at_top(ts.explain_schedule(s))
    assert declared == {"R": "no axis long enough to vectorize: loops as declared",
                        "D": "rows of 3, too short to vectorize",
                        "H": declared.get("H", ""),
                        "K": "kept as scheduled: its loops were already split, fused, reordered or annotated"}, declared
    assert declared["H"].startswith("serial: too little work")
    assert set(declared) - {"K"} == untouched(s) and "E" not in declared
    a, c, b = data(4, 3), data(3, 3, seed=1), data(64, 64, seed=2)
    i = np.random.default_rng(3).integers(0, 8, (5, 4)).astype(np.int32)
    r, d, h, e = ts.build(s, [A, C, img, B, R, D, H, E])(a, c, i, b)
    np.testing.assert_allclose(r[:, 0], a.sum(1), rtol=1e-5)
    np.testing.assert_allclose(d, 2 * c, rtol=1e-6)
    np.testing.assert_allclose(h, np.bincount(i.ravel(), minlength=8), rtol=1e-6)
    np.testing.assert_allclose(e, (b + 1) * 3, rtol=1e-6)
