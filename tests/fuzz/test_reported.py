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
