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


def test_select_on_a_producer_loop_at_a_vectorized_loop_stays_inside():
    """Fuzz schedules:348 (conv_relu_conv, a convolution computed at relu's vectorized loop): unswitching
    the vectorized loop moved a select whose condition used a loop of the producer computed inside it out
    of that loop, and the C did not compile (``h_outer`` undeclared). Here the producer's select is on its
    own row loop; its gather keeps the vectorized loop scalar, so unswitching is tried."""
    A = ts.placeholder((4, 16), name="A")
    P = ts.compute((4, 16), lambda k, j: ts.if_then_else(k < 2, A[k, (j * 7) % 16], 0.5), name="P")
    C = ts.compute((16,), lambda j: P[0, j] + P[1, j] + P[2, j] + P[3, j], name="C")
    s = ts.create_schedule(C.op)
    s[C].vectorize(C.op.axis[0])
    s[P].compute_at(s[C], C.op.axis[0])
    a = np.random.default_rng(0).random((4, 16), dtype=np.float32)
    want = a[:2, (np.arange(16) * 7) % 16].sum(axis=0) + 1.0
    np.testing.assert_allclose(ts.build(s, [A, C])(a), want, rtol=1e-6)
