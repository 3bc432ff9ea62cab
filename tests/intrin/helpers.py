"""Helpers for the tests of tesched.intrin: a matrix product and its bias + relu epilogue, declared with
ts.compute, centred random data, and tolerances per dtype."""
import numpy as np

import tesched as ts
from tesched.intrin import supported_isas

HOST_ISAS = supported_isas()
"""The micro-kernel paths this host can run (always ends with plain C)."""
SIMD_ISAS = [isa for isa in HOST_ISAS if isa != "c"]


def matmul(m, n, k, dtype="float32", b_shape=None, b_read=None):
    """A[m, k], B and C = A @ B (m x n); ``b_read(b, r, j)`` reads B differently (B of shape ``b_shape``)."""
    a = ts.placeholder((m, k), name="A", dtype=dtype)
    b = ts.placeholder(b_shape or (k, n), name="B", dtype=dtype)
    r = ts.reduce_axis((0, k), name="k")
    read = b_read or (lambda b, r, j: b[r, j])
    c = ts.compute((m, n), lambda i, j: ts.sum(a[i, r] * read(b, r, j), axis=r), name="C")
    return a, b, c


def bias_relu(c):
    """bias[n] and out = max(c + bias, 0)."""
    bias = ts.placeholder((c.shape[1],), name="bias", dtype=c.dtype)
    out = ts.compute(c.shape, lambda i, j: ts.maximum(c[i, j] + bias[j], 0.0), name="out")
    return bias, out


def centered(rand, shape, dtype="float32") -> np.ndarray:
    return rand(shape, dtype, low=-1.0, high=1.0)


def tolerance(dtype) -> dict:
    return dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
