"""Tests of tesched.te.realize: pipelines whose intermediates are declared without shapes, rebuilt over their
inferred regions, under random legal schedules, against NumPy.

Hypothesis draws a pipeline: a repeat-edge read of the input (the only stage that reads it), then up to
three stages, each reading one or two earlier ones at shifted (``y + d``), downsampled (``2y + d``) or
upsampled (``y // 2 + d``) coordinates, and an output of a drawn size (constant or symbolic) reading the
last stages. Every intermediate is ``compute(None, ...)`` or ``Func(None, ...)``. The schedule: the output
split, reordered, fused and annotated at random (split by constant factors only for symbolic sizes); each
intermediate inlined, computed at the root (split and annotated), or computed at a loop of the output
enclosing all its readers. The NumPy reference evaluates
each stage at the coordinates its readers ask for, so it knows nothing of regions.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import tesched as ts
from tests.poly.test_random_schedules import annotate, build_or_known_refusal, split_loops

KINDS = ("shift", "down", "up")


def _coord(kind: str, v, d: int):
    return v + d if kind == "shift" else 2 * v + d if kind == "down" else v // 2 + d


@st.composite
def pipelines(draw):
    """(stages, output reads): stage k's reads are (source, kind_y, dy, kind_x, dx, weight) tuples."""
    stages = [[]]       # stage 0 reads the input
    for k in range(1, draw(st.integers(1, 4))):
        count = draw(st.integers(1, 2))
        stages.append([(draw(st.integers(0, k - 1)), draw(st.sampled_from(KINDS)), draw(st.integers(-2, 2)),
                        draw(st.sampled_from(KINDS)), draw(st.integers(-2, 2)),
                        draw(st.sampled_from([0.5, 1.0, -2.0]))) for _ in range(count)])
    last = len(stages) - 1
    outputs = [(last, "shift", draw(st.integers(-1, 1)), "shift", draw(st.integers(-1, 1)), 1.0)]
    if last and draw(st.booleans()):
        outputs.append((draw(st.integers(0, last - 1)), "shift", 0, "shift", 0, 0.25))
    return stages, outputs


def _sum(reads, tensors, y, x):
    return sum(w * tensors[src][_coord(ky, y, dy), _coord(kx, x, dx)] for src, ky, dy, kx, dx, w in reads)


def declare(stages, outputs, h, w, use_func):
    inp = ts.placeholder((h, w), name="inp")
    tensors = [ts.compute(None, lambda y, x: inp[ts.clamp(y, 0, h - 1), ts.clamp(x, 0, w - 1)] * 1.0, name="s0")]
    for k, reads in enumerate(stages[1:], 1):
        if use_func:
            f = ts.Func(None, "float32", name=f"s{k}", axes=("y", "x"))
            y, x = f.axis
            f[y, x] = _sum(reads, tensors, y, x)
            tensors.append(f.tensor)
        else:
            tensors.append(ts.compute(None, lambda y, x, r=reads: _sum(r, tensors, y, x), name=f"s{k}"))
    out = ts.compute((h, w), lambda y, x: _sum(outputs, tensors, y, x), name="out")
    return inp, tensors, out


def reference(stages, outputs, a):
    h, w = a.shape

    def value(k, ys, xs):
        if k == 0:
            return a[np.clip(ys, 0, h - 1), np.clip(xs, 0, w - 1)].astype(np.float64)
        return evaluate(stages[k], ys, xs)

    def evaluate(reads, ys, xs):
        return sum(wt * value(src, _coord(ky, ys, dy), _coord(kx, xs, dx)) for src, ky, dy, kx, dx, wt in reads)

    ys, xs = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    return evaluate(outputs, ys, xs)


def readers_of(stages, outputs):
    """The readers of each stage the output depends on (stage indices, and "out")."""
    found: dict[int, set] = {}
    for src, *_ in outputs:
        found.setdefault(src, set()).add("out")
    for k in reversed(range(len(stages))):
        if k in found:
            for src, *_ in stages[k]:
                found.setdefault(src, set()).add(k)
    return found


def arrange(data, stage, symbolic):
    """Random loops for a stage: the split/tile/fuse/reorder of the random-schedule tests, or for symbolic
    sizes (where nparts, fusing and unrolling need constant extents) splits by constant factors only."""
    if not symbolic:
        split_loops(data, stage)
        return
    for axis in list(stage.leaf_iter_vars):
        if data.draw(st.booleans(), label=f"split {axis.name}"):
            stage.split(axis, factor=data.draw(st.integers(1, 5)))


def place(data, s, tensors, out, readers, symbolic):
    """Place each intermediate, last first: inline, root, or at a loop of the output enclosing its readers."""
    # the deepest loop of the output each stage's producers may be computed at (-1: none)
    level: dict = {"out": len(s[out].leaf_iter_vars) - 1}
    for k in sorted(readers, reverse=True):
        inside = min(level[r] for r in readers[k])
        options = ["inline", "root"] + (["at"] if inside >= 0 else [])
        how = data.draw(st.sampled_from(options), label=f"s{k} placement")
        stage = s[tensors[k]]
        if how == "inline":
            stage.compute_inline()
            level[k] = inside
        elif how == "root":
            arrange(data, stage, symbolic)
            annotate(data, stage, parallel=True, unroll=False)
            level[k] = -1
        else:
            at = data.draw(st.integers(0, inside), label=f"s{k} at loop")
            stage.compute_at(s[out], s[out].leaf_iter_vars[at])
            annotate(data, stage, parallel=False, unroll=not symbolic)
            level[k] = at


pytestmark = pytest.mark.usefixtures("module_cache")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), pipe=pipelines(), h=st.integers(1, 7), w=st.integers(1, 9), symbolic=st.booleans(),
       use_func=st.booleans())
def test_inferred_pipelines_under_random_legal_schedules_match_numpy(data, pipe, h, w, symbolic, use_func):
    stages, outputs = pipe
    H, W = (ts.var("H"), ts.var("W")) if symbolic else (h, w)
    inp, tensors, out = declare(stages, outputs, H, W, use_func)
    s = ts.create_schedule(out)
    arrange(data, s[out], symbolic)
    annotate(data, s[out], parallel=True, unroll=False)
    place(data, s, tensors, out, readers_of(stages, outputs), symbolic)
    kernel = build_or_known_refusal(s, [inp, out], "inferred_pipeline")
    if kernel is None:
        return
    note(str(kernel.lowered))
    a = np.random.default_rng(h * 31 + w).uniform(-1, 1, (h, w)).astype(np.float32)
    np.testing.assert_allclose(kernel(a), reference(stages, outputs, a), rtol=1e-4, atol=1e-4)


def test_a_compute_is_rebuilt_over_its_region_and_its_readers_read_it_shifted():
    """blur_x's region starts at -1: its buffer element k holds blur_x at k - 1, and blur_y reads it so."""
    inp = ts.placeholder((6, 8), name="inp")
    bx = ts.compute(None, lambda y, x: inp[ts.clamp(y, 0, 5), x] * 2.0, name="blur_x")
    by = ts.compute((6, 8), lambda y, x: bx[y - 1, x] + bx[y + 1, x], name="blur_y")
    s = ts.create_schedule(by)
    rebuilt = s[bx].op
    assert rebuilt is not bx.op and rebuilt.axis == bx.op.axis and rebuilt.output(0).shape == (8, 8)
    text = str(ts.lower(s, [inp, by]))
    assert "# blur_x: region inferred from its readers: y in [-1, 7), x in [0, 8)" in text
    assert "blur_x[y#2, x#2] + blur_x[y#2 + 2, x#2]" in text
    a = np.random.default_rng(1).random((6, 8), dtype=np.float32)
    p = 2 * a[np.clip(np.arange(-1, 7), 0, 5)]
    np.testing.assert_allclose(ts.build(s, [inp, by])(a), p[:-2] + p[2:], rtol=1e-6)


def test_a_region_is_inferred_once():
    inp = ts.placeholder((8,), name="inp")
    f = ts.compute(None, lambda i: inp[ts.clamp(i, 0, 7)] * 2.0, name="f")
    g = ts.compute((8,), lambda i: f[i] + f[i + 1], name="g")
    ts.create_schedule(g)
    ts.create_schedule(g)        # the same region again
    h = ts.compute((8,), lambda i: f[i - 2], name="h")
    with pytest.raises(ts.LoweringError, match="compute f: its region was inferred as extent 9 along i for an "
                                               "earlier schedule, and these outputs need extent 8"):
        ts.create_schedule(h)
