"""Tests of tesched.lower.pipeline: the printed loop IR (where stages are produced, what is allocated, loop kinds),
compute_at at every loop level, inlining, primitives composed in any order, the debug trace, and the pipeline
as one list of passes (each step visible, every prefix verified)."""
import re

import numpy as np
import pytest

import tesched as ts
from tesched.lower import pipeline
from tesched.lower.pipeline import PASSES, Phase, lower_for_target, lower_through, passes_until
from targets import AVX512


def stencil3x3(height, width):
    """P = 2A + 1 and C = 3x3 box sum of P (C is 2 smaller than P in each dimension)."""
    A = ts.placeholder((height, width), name="A")
    P = ts.compute((height, width), lambda y, x: A[y, x] * 2.0 + 1.0, name="P")
    C = ts.compute((height - 2, width - 2),
                   lambda y, x: sum(P[y + dy, x + dx] * float(1 + dy + 3 * dx) for dy in range(3) for dx in range(3)),
                   name="C")
    return A, P, C


def stencil3x3_reference(a):
    p = a * 2 + 1
    h, w = p.shape
    return sum(p[dy:h - 2 + dy, dx:w - 2 + dx] * float(1 + dy + 3 * dx) for dy in range(3) for dx in range(3))


def allocations(lowered) -> list[str]:
    return re.findall(r"allocate (\w+\[[^\]]*\])", str(lowered))


def test_lowered_text_shows_stages_loops_and_kinds():
    A = ts.placeholder((16, 16), name="A")
    B = ts.compute((16, 16), lambda i, j: A[i, j] * 2.0, name="B")
    C = ts.compute((16, 16), lambda i, j: B[i, j] + 1.0, name="C")
    s = ts.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=4)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].reorder(io, jo, ii, ji)
    s[C].parallel(io)
    s[C].unroll(ii)
    s[C].vectorize(ji)
    text = str(ts.lower(s, [A, C], name="scaled"))
    assert text.index("def scaled(A: float32[16, 16], C: float32[16, 16]):") < text.index("produce B")
    assert text.index("produce B") < text.index("produce C")
    assert "allocate B[float32 * 16 * 16]" in text
    assert re.search(r"parallel for i\.outer in \[0, 4\)", text)
    assert re.search(r"unrolled for i\.inner in \[0, 4\)", text)
    assert re.search(r"vectorized for j\.inner in \[0, 8\)", text)


def test_lowered_signature_lists_size_parameters():
    n = ts.var("n")
    A = ts.placeholder((n, 3), name="A")
    B = ts.compute((n, 3), lambda i, j: A[i, j] + 1.0, name="B")
    lowered = ts.lower(ts.create_schedule(B.op), [A, B])
    assert "def main(A: float32[n, 3], B: float32[n, 3], n: int64):" in str(lowered)
    assert [p.name for p in lowered.params] == ["n"]


def test_lowered_signature_lists_runtime_params_after_the_sizes():
    n = ts.var("n")
    A = ts.placeholder((n, 3), name="A")
    sigma, gain = ts.param("sigma", "float64"), ts.param("gain")
    B = ts.compute((n, 3), lambda i, j: A[i, j] * gain + sigma.astype("float32"), name="B")
    lowered = ts.lower(ts.create_schedule(B.op), [A, B, gain])
    assert "def main(A: float32[n, 3], B: float32[n, 3], n: int64, gain: float32, sigma: float64):" in str(lowered)
    assert lowered.scalars == (gain, sigma) and lowered.params == (n,)
    with pytest.raises(ValueError, match="param gain appears twice in the arguments"):
        ts.lower(ts.create_schedule(B.op), [A, B, gain, gain])
    C = ts.compute((n, 3), lambda i, j: B[i, j] * ts.param("gain"), name="C")
    with pytest.raises(ts.LoweringError, match="two runtime parameters are named gain"):
        ts.lower(ts.create_schedule(C.op), [A, C])


# compute_at at every level of a tiled 3x3 stencil ------------------------------------------------

# 18x18 input, 16x16 output in 8x8 tiles: loops y.outer, x.outer, y.inner, x.inner.
# The region of P one iteration needs: a band of tile rows plus the halo, a tile plus the halo (10x10),
# one output row plus the halo, and the 3x3 window of one point.
EXPECTED_FOOTPRINTS = ["P[float32 * 10 * 18]", "P[float32 * 10 * 10]", "P[float32 * 3 * 10]", "P[float32 * 3 * 3]"]


@pytest.mark.parametrize("level", range(4))
def test_compute_at_every_level_of_a_tiled_stencil(level, rand):
    A, P, C = stencil3x3(18, 18)
    s = ts.create_schedule(C.op)
    loops = s[C].tile(*C.op.axis, 8, 8)
    s[P].compute_at(s[C], loops[level])
    lowered = ts.lower(s, [A, C])
    assert allocations(lowered) == [EXPECTED_FOOTPRINTS[level]]
    text = str(lowered)
    # P is produced inside the attach loop, before C's body in that loop
    attach = re.search(rf"for {re.escape(loops[level].name)} in", text).start()
    assert attach < text.index("produce P") < text.rindex("C[")
    f = ts.build(s, [A, C], name=f"stencil_at_{level}")
    a = rand((18, 18))
    np.testing.assert_allclose(f(a), stencil3x3_reference(a), rtol=1e-5)


@pytest.mark.parametrize("level", range(4))
def test_compute_at_every_level_with_partial_tiles(level, rand):
    A, P, C = stencil3x3(13, 12)          # 11x10 output in 4x3 tiles: the last tiles are clipped
    s = ts.create_schedule(C.op)
    loops = s[C].tile(*C.op.axis, 4, 3)
    s[C].parallel(loops[0])
    s[P].compute_at(s[C], loops[level])
    f = ts.build(s, [A, C], name=f"stencil_partial_at_{level}")
    a = rand((13, 12))
    np.testing.assert_allclose(f(a), stencil3x3_reference(a), rtol=1e-5)


def test_compute_at_with_symbolic_sizes(rand):
    n = ts.var("n")
    A = ts.placeholder((n + 2,), name="A")
    P = ts.compute((n + 2,), lambda i: A[i] * 3.0, name="P")
    C = ts.compute((n,), lambda i: P[i] + P[i + 1] + P[i + 2], name="C")
    s = ts.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=4)
    s[P].compute_at(s[C], io)
    f = ts.build(s, [A, C], name="symbolic_at")
    for size in (1, 3, 4, 13):
        a = rand(size + 2)
        c = np.empty(size, np.float32)
        f(a, c)
        p = a * 3
        np.testing.assert_allclose(c, p[:-2] + p[1:-1] + p[2:], rtol=1e-5)


def test_compute_at_of_a_reduction_inside_a_consumer_loop(rand):
    A = ts.placeholder((10, 6), name="A")
    k = ts.reduce_axis((0, 6), name="k")
    S = ts.compute((10,), lambda i: ts.sum(A[i, k], axis=k), name="S")
    C = ts.compute((10,), lambda i: S[i] * 2.0, name="C")
    s = ts.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=3)
    s[S].compute_at(s[C], io)
    assert allocations(ts.lower(s, [A, C])) == ["S[float32 * 3]"]
    f = ts.build(s, [A, C], name="reduction_at")
    a = rand((10, 6))
    np.testing.assert_allclose(f(a), a.sum(1) * 2, rtol=1e-5)


def test_nested_compute_at_and_two_readers_inside_the_loop(rand):
    A = ts.placeholder((12, 8), name="A")
    P = ts.compute((12, 8), lambda i, j: A[i, j] + 1.0, name="P")
    Q = ts.compute((12, 8), lambda i, j: P[i, j] * P[i, 7 - j], name="Q")
    C = ts.compute((12, 8), lambda i, j: Q[i, j] + P[i, j], name="C")
    s = ts.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=5)
    s[Q].compute_at(s[C], ii)
    s[P].compute_at(s[C], io)                 # read by Q (inside ii) and by C
    text = str(ts.lower(s, [A, C]))
    assert text.index("produce P") < text.index("for i.inner") < text.index("produce Q")
    f = ts.build(s, [A, C], name="nested_at")
    a = rand((12, 8))
    p = a + 1
    np.testing.assert_allclose(f(a), p * p[:, ::-1] + p, rtol=1e-5)


def test_producer_inside_producer(rand):
    A = ts.placeholder((9, 9), name="A")
    P = ts.compute((9, 9), lambda i, j: A[i, j] * 2.0, name="P")
    Q = ts.compute((8, 9), lambda i, j: P[i, j] + P[i + 1, j], name="Q")
    C = ts.compute((8, 8), lambda i, j: Q[i, j] - Q[i, j + 1], name="C")
    s = ts.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(*C.op.axis, 4, 4)
    s[Q].compute_at(s[C], jo)
    s[P].compute_at(s[Q], Q.op.axis[0])
    f = ts.build(s, [A, C], name="producer_in_producer")
    a = rand((9, 9))
    p = a * 2
    q = p[:-1] + p[1:]
    np.testing.assert_allclose(f(a), q[:, :-1] - q[:, 1:], rtol=1e-5, atol=1e-6)


# inlining ----------------------------------------------------------------------------------------

def test_chain_of_inlined_stages(rand):
    A = ts.placeholder((8,), name="A")
    B = ts.compute((8,), lambda i: A[i] + 1.0, name="B")
    C = ts.compute((8,), lambda i: B[i] * B[i], name="C")
    D = ts.compute((8,), lambda i: C[7 - i] - B[i], name="D")
    s = ts.create_schedule(D.op)
    s[B].compute_inline()
    s[C].compute_inline()
    text = str(ts.lower(s, [A, D]))
    assert "produce B" not in text and "produce C" not in text and "allocate" not in text
    assert "A[7 - i]" in text
    f = ts.build(s, [A, D], name="inline_chain")
    a = rand(8)
    b = a + 1
    np.testing.assert_allclose(f(a), (b * b)[::-1] - b, rtol=1e-5)


def test_inline_into_a_reduction_and_a_compute_at_stage(rand):
    A = ts.placeholder((6, 6), name="A")
    P = ts.compute((6, 6), lambda i, j: ts.exp(A[i, j]), name="P")
    Q = ts.compute((6, 6), lambda i, j: P[i, j] + P[j, i], name="Q")
    k = ts.reduce_axis((0, 6), name="k")
    R = ts.compute((6,), lambda i: ts.max(Q[i, k], axis=k), name="R")
    s = ts.create_schedule(R.op)
    s[P].compute_inline()
    s[Q].compute_at(s[R], R.op.axis[0])
    f = ts.build(s, [A, R], name="inline_then_at")
    a = rand((6, 6))
    e = np.exp(a)
    np.testing.assert_allclose(f(a), (e + e.T).max(1), rtol=1e-5)


# primitives composed in any order ----------------------------------------------------------------

def test_compute_at_then_split_and_fuse_the_attach_loop(rand):
    A = ts.placeholder((12, 10), name="A")
    P = ts.compute((12, 10), lambda i, j: A[i, j] + 1.0, name="P")
    C = ts.compute((12, 10), lambda i, j: P[i, j] * 2.0, name="C")
    s = ts.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=4)
    s[P].compute_at(s[C], io)
    a_, b_ = s[C].split(io, factor=2)        # the attach loop is split after compute_at ...
    fused = s[C].fuse(a_, b_)                # ... and its pieces fused again
    lowered = ts.lower(s, [A, C])
    text = str(lowered)
    assert re.search(rf"for {re.escape(fused.name)} in \[0, 3\) \{{\n\s+allocate P\[float32 \* 4 \* 10\]", text)
    f = ts.build(s, [A, C], name="at_then_split_fuse")
    a = rand((12, 10))
    np.testing.assert_allclose(f(a), (a + 1) * 2, rtol=1e-6)


def test_compute_at_then_split_and_reorder_the_attach_loop(rand):
    A = ts.placeholder((12, 10), name="A")
    P = ts.compute((12, 10), lambda i, j: A[i, j] + 1.0, name="P")
    C = ts.compute((12, 10), lambda i, j: P[i, j] * 2.0 + P[i, 9 - j], name="C")
    s = ts.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=4)
    s[P].compute_at(s[C], C.op.axis[0])
    io, ii = s[C].split(C.op.axis[0], factor=5)     # 12 by 5: non-dividing
    s[C].reorder(ii, jo, io, ji)                     # P now lives in io, the innermost loop derived from i
    text = str(ts.lower(s, [A, C]))
    assert re.search(r"for i\.outer in [^\n]*\{\n\s+allocate P\[float32 \* 1 \* 10\]", text)
    f = ts.build(s, [A, C], name="at_then_split_reorder")
    a = rand((12, 10))
    np.testing.assert_allclose(f(a), (a + 1) * 2 + (a[:, ::-1] + 1), rtol=1e-5)


def test_tile_after_compute_at_of_a_stencil(rand):
    A, P, C = stencil3x3(18, 18)
    s = ts.create_schedule(C.op)
    y, x = C.op.axis
    s[P].compute_at(s[C], x)
    yo, xo, yi, xi = s[C].tile(y, x, 8, 8)     # P follows x to x.inner
    assert allocations(ts.lower(s, [A, C])) == ["P[float32 * 3 * 3]"]
    f = ts.build(s, [A, C], name="at_then_tile")
    a = rand((18, 18))
    np.testing.assert_allclose(f(a), stencil3x3_reference(a), rtol=1e-5)


# debug trace -------------------------------------------------------------------------------------

def _small_schedule():
    A = ts.placeholder((4,), name="A")
    B = ts.compute((4,), lambda i: A[i] + 1.0, name="B")
    return ts.create_schedule(B.op), [A, B]


def _assert_trace(err: str) -> None:
    for p in PASSES:
        if p.phase is Phase.LOWER:
            assert re.search(rf"--- after {re.escape(p.name)} \(\d+\.\d ms\)", err), p.name


def test_debug_flag_prints_each_pass_and_its_time(capsys):
    s, args = _small_schedule()
    ts.lower(s, args, debug=True)
    _assert_trace(capsys.readouterr().err)


def test_debug_environment_variable(capsys, monkeypatch):
    s, args = _small_schedule()
    monkeypatch.setenv("TESCHED_DEBUG", "1")
    ts.lower(s, args)
    _assert_trace(capsys.readouterr().err)
    monkeypatch.setenv("TESCHED_DEBUG", "0")
    ts.lower(s, args)
    assert "--- after" not in capsys.readouterr().err


# every step a named pass -------------------------------------------------------------------------

def _specialized_and_fused():
    """A kernel whose lowering goes through every poly step: a specialized stage, a fuse over symbolic
    extents made parallel (collapsed), a value used twice (bound once), a data-dependent index (checked)."""
    m, n = ts.var("m"), ts.var("n")
    A = ts.placeholder((m, n), name="A")
    I = ts.placeholder((m,), "int32", name="I")
    def value(i, j):
        e = ts.exp(A[i, j])
        return e * e + A[I[i], j]

    B = ts.compute((m, n), value, name="B")
    s = ts.create_schedule(B.op)
    s[B].parallel(s[B].fuse(*B.op.axis))
    s[B].specialize(n % 4 == 0)
    return s, [A, I, B]


def _vectorized_select():
    """A vectorized loop with a select whose condition does not change with it (unswitched) next to a
    reduction (vector partial sums) and a compute_at buffer."""
    A = ts.placeholder((8, 24), name="A")
    k = ts.reduce_axis((0, 24), name="k")
    S = ts.compute((8,), lambda i: ts.sum(A[i, k], axis=k), name="S")
    C = ts.compute((8, 24), lambda i, j: ts.if_then_else(i < 4, ts.exp(A[i, j]), A[i, j]) + S[i], name="C")
    s = ts.create_schedule(C.op)
    s[S].compute_at(s[C], C.op.axis[0])
    s[S].vectorize(k)
    s[C].vectorize(C.op.axis[1])
    return s, [A, C]


def test_the_pipeline_lists_every_step_from_lower_to_c():
    names = [p.name for p in PASSES]
    for step in ("index checks", "AST to loop IR", "specialize", "collapse fused loops", "bind shared subexpressions",
                 "unswitch loops left scalar", "dot products", "explicit SIMD", "promote registers"):
        assert step in names, step
    assert len(set(names)) == len(names)
    listed = " ".join(pipeline.__doc__.split())       # the module's docstring lists them all, for a newcomer
    assert all(name in listed for name in names), [name for name in names if name not in listed]
    phases = [p.phase for p in PASSES]
    assert phases == sorted(phases, key=[Phase.LOWER, Phase.BUILD].index)     # lower first, then build
    with pytest.raises(ValueError, match="no lowering pass is called 'inline'; the passes are: check arguments"):
        passes_until("inline")


@pytest.mark.parametrize("make", [_specialized_and_fused, _vectorized_select])
def test_every_prefix_of_the_pipeline_lowers_and_verifies(make, monkeypatch):
    """Bisecting a miscompile: the pipeline stopped after any pass runs, its loop IR checked by the verifier
    after every pass (TESCHED_VERIFY), and the whole list gives what lower + lower_for_target give."""
    monkeypatch.setenv("TESCHED_VERIFY", "1")
    s, args = make()
    target = ts.Target(AVX512)
    for p in PASSES:
        state = lower_through(s, args, p.name, target=target)
    whole = lower_for_target(ts.lower(s, args), target)
    assert str(state.body) == str(whole.body)


def test_the_poly_steps_show_in_the_ir_between_them():
    """Each step of the loop IR's making is visible on its own: the fused loops are a nest until collapsed,
    the shared ``exp`` is repeated until bound once, the specialized nest appears with its pass."""
    s, args = _specialized_and_fused()
    emitted = str(lower_through(s, args, "AST to loop IR").body)
    specialized = str(lower_through(s, args, "specialize").body)
    collapsed = str(lower_through(s, args, "collapse fused loops").body)
    bound = str(lower_through(s, args, "bind shared subexpressions").body)
    assert "n % 4 == 0" not in emitted and "n % 4 == 0" in specialized
    assert "parallel for" not in specialized and "parallel for i.j.fused" in collapsed
    assert "let t0" not in collapsed and re.search(r"let t0 = exp\(A\[", bound), bound
    assert "A[checked(I[i], m), j]" in emitted, emitted


def test_debug_trace_shows_the_build_passes(capsys):
    s, args = _small_schedule()
    lower_for_target(ts.lower(s, args), ts.Target(AVX512), debug=True)
    err = capsys.readouterr().err
    for p in PASSES:
        if p.phase is Phase.BUILD:
            assert f"--- after {p.name} (" in err, p.name
