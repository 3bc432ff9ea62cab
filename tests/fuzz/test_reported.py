"""One minimal reproduction per bug class found by trying tesched as a user and by the fuzzing campaign.

A class whose fix is still to come is marked ``xfail(strict=True)``, so the fix shows up as an
unexpected pass (then the mark goes). Reproductions that could kill the process run in a child
interpreter (``run_python``).
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

import tesched as ts

pytestmark = pytest.mark.usefixtures("isolated_cache")


@pytest.mark.xfail(strict=True, reason="compute_at at an extent-1 loop reads a copy never written")
def test_compute_at_a_loop_of_extent_one(rand):
    A = ts.placeholder((3, 2), name="A")
    E = ts.compute((3, 2), lambda i, j: A[i, j] * 2.0, name="E")
    S = ts.compute((3,), lambda i: A[i, 0] + A[i, 1], name="S")
    O = ts.compute((3, 2), lambda i, j: E[i, j] + S[i], name="O")
    s = ts.create_schedule(O.op)
    i, j = O.op.axis
    s[O].reorder(j, i)
    jo, ji = s[O].split(j, factor=1)
    io, ii = s[O].split(i, nparts=1)
    s[E].compute_at(s[O], ji)
    s[S].compute_at(s[O], io)
    a = rand((3, 2))
    np.testing.assert_allclose(ts.build(s, [A, O], name="extent_one")(a), 2 * a + a.sum(axis=1, keepdims=True),
                               rtol=1e-6)


@pytest.mark.xfail(strict=True, reason="inlining duplicates shared subexpressions (exponential IR)")
def test_inlining_a_chain_with_fan_in_is_linear():
    def chain(depth: int) -> int:
        A = ts.placeholder((8,), name="A")
        T = A
        stages = []
        for d in range(depth):
            prev = T
            T = ts.compute((8,), lambda i, prev=prev: prev[i] + prev[i] * 2.0 + prev[i] * prev[i], name=f"T{d}")
            stages.append(T)
        s = ts.create_schedule(T.op)
        for st in stages[:-1]:
            s[st].compute_inline()
        return len(str(ts.lower(s, [A, T])))

    assert chain(8) < 3 * chain(4)


@pytest.mark.skipif(sys.platform != "linux", reason="the tile/fuse cliff was seen on Linux")
@pytest.mark.xfail(strict=True, reason="isl AST generation of tile->fuse->tile->fuse does not finish")
def test_tile_fuse_tile_fuse_lowers(run_python):
    done = run_python("""
        import tesched as ts
        A = ts.placeholder((32, 32), name="A")
        B = ts.compute((32, 32), lambda y, x: A[y, x] * 2.0, name="B")
        s = ts.create_schedule(B.op)
        y, x = B.op.axis
        yo, xo, yi, xi = s[B].tile(y, x, 5, 3)
        f = s[B].fuse(yo, xo)
        g = s[B].fuse(yi, xi)
        fo, go, fi, gi = s[B].tile(f, g, 6, 7)
        s[B].fuse(s[B].fuse(fo, go), s[B].fuse(fi, gi))
        ts.lower(s, [A, B])
        print("lowered")
    """, timeout=20)
    assert "lowered" in done.stdout
