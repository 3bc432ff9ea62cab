"""One minimal reproduction per bug class found by trying tesched as a user and by the fuzzing campaign.

A class whose fix is still to come is marked ``xfail(strict=True)``, so the fix shows up as an
unexpected pass (then the mark goes). Reproductions that could kill the process run in a child
interpreter (``run_python``).
"""
from __future__ import annotations

import sys

import pytest

pytestmark = pytest.mark.usefixtures("isolated_cache")


@pytest.mark.skipif(sys.platform != "linux", reason="the tile/fuse cliff was seen on Linux")
def test_tile_fuse_tile_fuse_lowers(run_python):
    done = run_python("""
        import numpy as np
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
        a = np.random.default_rng(0).random((32, 32), dtype=np.float32)
        np.testing.assert_allclose(ts.build(s, [A, B])(a), a * 2.0, rtol=1e-6)
        print("matches NumPy")
    """, timeout=120)
    assert "lowered" in done.stdout, done.stderr[-2000:]
    assert "matches NumPy" in done.stdout, done.stderr[-2000:]
