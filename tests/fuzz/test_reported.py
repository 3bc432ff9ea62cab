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
