"""Loop unswitching of the vectorized loops the vectorizer leaves scalar: a loop-invariant select moves out,
the values stay NumPy's, and a branch that can be vectorized is; a condition on a variable declared inside
the loop (an inner loop's, a producer's computed there) stays."""
import re

import numpy as np

import tesched as ts
from tesched.ir import nodes as ir
from tesched.ir.visitor import bound_inside, walk_stmts
from tesched.schedule.kinds import LoopKind
from tesched.te.expr import Select
from tesched.te.visit import walk
from tesched.transform.unswitch import unswitch
from targets import AVX512, pinned


def gathered_or_copied():
    """Rows below 3 gather from A (not vectorizable here), the others copy B: a concatenation."""
    A, B = ts.placeholder((3, 16), name="A"), ts.placeholder((5, 16), name="B")
    C = ts.compute((8, 16), lambda i, j: ts.if_then_else(i < 3, A[i, (j * 7) % 16], B[i - 3, j]), name="C")
    s = ts.create_schedule(C.op)
    s[C].vectorize(C.op.axis[1])
    return ts.build(s, [A, B, C], name="unswitch_concat")


def test_values_and_vectorized_copy():
    code, here = pinned(gathered_or_copied, AVX512)
    source = code.c_source
    assert re.search(r"if \(\(i\w* < 3\)\) \{", source) and " ? " not in source
    assert "ts_vload_f32x16(&B" in source
    rng = np.random.default_rng(0)
    a, b = rng.random((3, 16), dtype=np.float32), rng.random((5, 16), dtype=np.float32)
    want = np.concatenate([a[:, (np.arange(16) * 7) % 16], b])
    np.testing.assert_array_equal(here(a, b), want)


def test_a_condition_that_changes_with_the_loop_stays():
    A = ts.placeholder((16,), name="A")
    C = ts.compute((16,), lambda j: ts.if_then_else(j < 3, A[(j * 7) % 16], 0.0), name="C")
    s = ts.create_schedule(C.op)
    s[C].vectorize(C.op.axis[0])
    lowered = ts.lower(s, [A, C], name="unswitch_none")
    body = lowered.body if hasattr(lowered, "body") else lowered
    loops = [st for st in walk_stmts(body) if isinstance(st, ir.For) and st.kind is LoopKind.VECTORIZED]
    assert loops and all(unswitch(loop) is None for loop in loops)
    assert any(isinstance(n, Select) for loop in loops for st in walk_stmts(loop) if isinstance(st, ir.Store)
               for n in walk(st.value))


def test_a_condition_on_an_inner_loop_stays():
    """A producer computed at the vectorized loop selects on its own loop variable: that condition does
    not change with the vectorized loop, but it cannot move out of it (its variable is declared inside).
    Found by the fuzz campaign (schedules:348, conv_relu_conv: the C did not compile)."""
    A = ts.placeholder((4, 16), name="A")
    P = ts.compute((4, 16), lambda k, j: ts.if_then_else(k < 2, A[k, (j * 7) % 16], 0.5), name="P")
    C = ts.compute((16,), lambda j: P[0, j] + P[1, j] + P[2, j] + P[3, j], name="C")
    s = ts.create_schedule(C.op)
    s[C].vectorize(C.op.axis[0])
    s[P].compute_at(s[C], C.op.axis[0])
    lowered = ts.lower(s, [A, C], name="unswitch_inner")
    loops = [st for st in walk_stmts(lowered.body) if isinstance(st, ir.For) and st.kind is LoopKind.VECTORIZED]
    assert loops
    for loop in loops:
        out = unswitch(loop)
        assert out is None or not any(id(v) in bound_inside(loop) for v in walk(out.cond))
    a = np.random.default_rng(1).random((4, 16), dtype=np.float32)
    want = a[:2, (np.arange(16) * 7) % 16].sum(axis=0) + 1.0
    np.testing.assert_allclose(ts.build(lowered)(a), want, rtol=1e-6)


def _select_loop(cond_of, written_buffer: bool = False) -> tuple[ir.For, ir.Buffer]:
    """``for o: [let t = o + 1;] for i: out[o, i] = select(cond, 1, 2)``, vectorized along ``o``, with the
    condition made by ``cond_of(o, i, t, buf)`` (buf: a buffer the loop writes, or one it only reads)."""
    o, i = ir.LoopVar("o"), ir.LoopVar("i")
    t = ts.te.expr.Var("t", "int64")
    out = ir.Buffer("out", [4, 4], "float32", ir.BufferScope.ARG)
    other = ir.Buffer("flags", [4], "int64", ir.BufferScope.ARG)
    read = out if written_buffer else other
    value = Select(cond_of(o, i, t, read), ts.te.expr.Const(1.0, "float32"), ts.te.expr.Const(2.0, "float32"))
    store = ir.Store(out, (o, i), value)
    zero, four = ts.te.expr.Const(0, "int64"), ts.te.expr.Const(4, "int64")
    inner = ir.For(i, zero, four, LoopKind.SERIAL, store)
    body = ir.LetStmt(t, o + 1, inner)
    return ir.For(o, zero, four, LoopKind.VECTORIZED, body), read


def test_conditions_on_anything_the_loop_binds_or_writes_stay_inside():
    """The loop's own variable, an inner loop's, a let's, and a read of a buffer the loop stores to all
    change inside the loop: unswitching on them would test a value before it exists (C that does not
    compile) or before the loop changes it (wrong values)."""
    cases = {
        "inner loop": lambda o, i, t, buf: i < 2,
        "let": lambda o, i, t, buf: t < 2,
        "own loop": lambda o, i, t, buf: o < 2,
    }
    for name, cond_of in cases.items():
        loop, _ = _select_loop(cond_of)
        assert unswitch(loop) is None, name
    loop, _ = _select_loop(lambda o, i, t, buf: ir.Load(buf, (ts.te.expr.Const(0, "int64"), o)) > 1.5,
                           written_buffer=True)
    assert unswitch(loop) is None, "a read of a buffer the loop writes"


def test_a_condition_on_outer_values_and_read_only_buffers_moves_out():
    n = ts.te.expr.Var("n", "int64")
    loop, flags = _select_loop(lambda o, i, t, buf: ir.Load(buf, (ts.te.expr.Const(0, "int64"),)) < n)
    moved = unswitch(loop)
    assert isinstance(moved, ir.IfThenElse)


def test_an_outer_vectorize_mark_over_a_padded_reduction_builds_and_is_right():
    """A vectorize mark on the outer loop of a convolution whose inlined padding tests the inner loops'
    variables (found by tests/poly/test_fusion_random.py): the padding's condition stays inside."""
    data = ts.placeholder((2, 6, 6), name="data")
    w = ts.placeholder((3, 2, 3, 3), name="w")
    pad = ts.compute((2, 8, 8), lambda c, y, x: ts.if_then_else(
        ts.all(y >= 1, y < 7, x >= 1, x < 7), data[c, y - 1, x - 1], 0.0), name="pad")
    rc, ry, rx = ts.reduce_axis((0, 2), "rc"), ts.reduce_axis((0, 3), "ry"), ts.reduce_axis((0, 3), "rx")
    conv = ts.compute((3, 6, 6), lambda f, y, x: ts.sum(pad[rc, y + ry, x + rx] * w[f, rc, ry, rx],
                                                        axis=[rc, ry, rx]), name="conv")
    s = ts.create_schedule(conv.op)
    s[pad].compute_inline()
    s[conv].vectorize(conv.op.axis[0])
    kernel = ts.build(s, [data, w, conv], name="outer_vectorized_padded_conv")
    rng = np.random.default_rng(3)
    a, b = rng.random((2, 6, 6), dtype=np.float32), rng.random((3, 2, 3, 3), dtype=np.float32)
    padded = np.pad(a, ((0, 0), (1, 1), (1, 1)))
    want = np.zeros((3, 6, 6))
    for ky in range(3):
        for kx in range(3):
            want += np.einsum("fc,cyx->fyx", b[:, :, ky, kx], padded[:, ky:ky + 6, kx:kx + 6])
    np.testing.assert_allclose(kernel(a, b), want, rtol=1e-5)


def _at_the_unswitch_pass(body_of):
    """The loop IR right before the ``unswitch loops left scalar`` pass, for the AVX-512 target."""
    from tesched.lower.pipeline import lower_through
    s, args = body_of()
    target = ts.Target(AVX512)
    return lower_through(s, args, "loops from 0, indices simplified", target=target).body, target


def _concat(gather: bool):
    A, B = ts.placeholder((3, 16), name="A"), ts.placeholder((5, 16), name="B")
    first = (lambda i, j: A[i, (j * 7) % 16]) if gather else (lambda i, j: A[i, j])
    C = ts.compute((8, 16), lambda i, j: ts.if_then_else(i < 3, first(i, j), B[i - 3, j]), name="C")
    s = ts.create_schedule(C.op)
    s[C].vectorize(C.op.axis[1])
    return s, [A, B, C]


def test_the_pass_unswitches_only_loops_the_vectorizer_would_leave_scalar():
    """A gathered branch leaves the loop scalar: the pass moves the condition out. Two contiguous branches
    are vectorized with the condition as C's ``?:`` (one vector for the loop): the pass leaves that loop."""
    from tesched.transform.unswitch import unswitch_scalar_loops
    body, target = _at_the_unswitch_pass(lambda: _concat(gather=True))
    moved = unswitch_scalar_loops(body, target.vector_bytes, target.features)
    guards = [[s for s in walk_stmts(b) if isinstance(s, ir.IfThenElse)] for b in (body, moved)]
    assert len(guards[0]) == 0 and len(guards[1]) == 1 and isinstance(guards[1][0].then_case, ir.For)
    assert unswitch_scalar_loops(body, 0, target.features) is body      # no SIMD: nothing to free
    body, target = _at_the_unswitch_pass(lambda: _concat(gather=False))
    assert unswitch_scalar_loops(body, target.vector_bytes, target.features) is body
