"""Scatter-to-gather inversion: which loops a gather sums over. A strided window's gather sums over the
window's taps (the short loops), whichever order the loops come in, and its gradient stays exact."""
import numpy as np
import pytest

import tesched as ts
from tesched.autodiff.inverse import invert, loop_vars
from tesched.te.tensor import IterType, IterVar, Range


@pytest.mark.parametrize("taps_first", [False, True])
def test_a_strided_window_gathers_over_its_taps(taps_first):
    h = IterVar(Range(0, 14), "h", IterType.DATA_PAR)
    r = ts.reduce_axis((0, 3), name="r")
    j = IterVar(Range(0, 29), "j", IterType.DATA_PAR)
    loops = loop_vars([r, h] if taps_first else [h, r])
    gather = invert([2 * h + r], loops, [j], {})
    assert [int(a.range.extent) for a in gather.free] == [3]       # 3 taps, not 14 outputs
    assert gather.conditions                                        # (j - r) even, 0 <= (j - r) / 2 < 14


def test_strided_window_gradient_matches_numpy():
    n, k, stride = 17, 3, 2
    x = ts.placeholder((n,), name="x")
    r = ts.reduce_axis((0, k), name="r")
    out = (n - k) // stride + 1
    y = ts.compute((out,), lambda i: ts.sum(x[stride * i + r] * (r + 1).astype("float32"), axis=r), name="y")
    (dx,) = ts.gradient(y, [x])
    f = ts.build(ts.create_schedule(dx.op), [dx])
    got = np.full(n, np.nan, "float32")
    f(got)
    want = np.zeros(n)
    for i in range(out):
        for t in range(k):
            want[stride * i + t] += t + 1
    np.testing.assert_allclose(got, want)
