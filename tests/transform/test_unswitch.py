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
    not change with the vectorized loop, but it cannot move out of it (its variable is declared inside)."""
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
