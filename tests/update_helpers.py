"""Halide's histogram as an update definition, ``f(x) = 0; f(im(r)) += 1``: shared by the declaration and
lowering tests of update definitions."""
import tesched as ts


def histogram(n, m):
    """``(im, r, f)``: ``m`` bin indices, the reduction over them, and the ``n``-bin ``ts.Func``."""
    im = ts.placeholder((m,), "int32", name="im")
    r = ts.reduce_axis((0, m), "r")
    f = ts.Func((n,), "int32", name="hist")
    x, = f.axis
    f[x] = 0
    f[im[r]] += 1
    return im, r, f
