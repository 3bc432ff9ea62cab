"""Build the polyhedral model of a schedule the way the lowering does (every model phase)."""
import numpy as np

import tesched as ts
from tesched.lower.pipeline import Request, passes_until, run_passes
from tesched.poly.model import PolyModel


def model_of(sch: ts.Schedule, args) -> PolyModel:
    """The model after every model phase of the pipeline (up to tensorize matching)."""
    return run_passes(Request(sch, tuple(args), "test"), passes_until("tensorize matching"), ts.Target()).model



def transposed_pair_kernel(n: int, step, name: str):
    """``U = transpose(2 * A) + 1`` through an intermediate ``T``, scheduled by ``step(s, T, U)``, built."""
    A = ts.placeholder((n, n), name="A")
    T = ts.compute((n, n), lambda i, j: A[i, j] * 2.0, name="T")
    U = ts.compute((n, n), lambda i, j: T[j, i] + 1.0, name="U")
    s = ts.create_schedule(U.op)
    step(s, T, U)
    return ts.build(s, [A, U], name=name)


def check_transposed_pair(kernel, rand, n: int) -> None:
    """Run a kernel of :func:`transposed_pair_kernel` on random data and compare with NumPy."""
    a = rand((n, n))
    np.testing.assert_allclose(kernel(a), a.T * 2 + 1, rtol=1e-6)
