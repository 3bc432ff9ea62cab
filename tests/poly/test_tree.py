"""Tests of tesched.poly.tree: loops with one iteration per enclosing iteration (a split by factor=1 or
nparts=1) get no band, so stages computed at them are allocated, produced and read in one place."""
import numpy as np
import pytest

import tesched as ts


@pytest.mark.parametrize("e_at, s_at", [("ji", "io"), ("ji", "ii"), ("jo", "io"), ("io", "io")])
def test_compute_at_loops_of_extent_one(e_at, s_at, rand):
    A = ts.placeholder((3, 2), name="A")
    E = ts.compute((3, 2), lambda i, j: A[i, j] * 2.0, name="E")
    S = ts.compute((3,), lambda i: A[i, 0] + A[i, 1], name="S")
    O = ts.compute((3, 2), lambda i, j: E[i, j] + S[i], name="O")
    s = ts.create_schedule(O.op)
    i, j = O.op.axis
    s[O].reorder(j, i)
    loops = dict(zip(("jo", "ji"), s[O].split(j, factor=1)))
    loops.update(zip(("io", "ii"), s[O].split(i, nparts=1)))
    s[E].compute_at(s[O], loops[e_at])
    s[S].compute_at(s[O], loops[s_at])
    f = ts.build(s, [A, O], name=f"extent_one_{e_at}_{s_at}")
    assert str(f.lowered).count("allocate S") == 1
    a = rand((3, 2))
    np.testing.assert_allclose(f(a), 2 * a + a.sum(axis=1, keepdims=True), rtol=1e-6)
