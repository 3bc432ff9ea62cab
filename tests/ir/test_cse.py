"""Tests of tesched.ir.cse (through inlining): a chain of inlined stages that use their producer several
times is bound with ``let`` once per stage, so the printed IR is linear in the chain's depth (Halide
inlines chains of depth 100), and the kernel still matches NumPy."""
import numpy as np
import pytest

import tesched as ts


def _chain(depth: int, fan_in: int, vectorize: bool):
    A = ts.placeholder((8,), name="A")
    T, stages = A, []
    for d in range(depth):
        T = ts.compute((8,), lambda i, prev=T: sum((prev[i] * float(k + 1) for k in range(fan_in)), prev[i] * 0.0)
                       * 0.25, name=f"T{d}")
        stages.append(T)
    s = ts.create_schedule(T.op)
    for st in stages[:-1]:
        s[st].compute_inline()
    if vectorize:
        s[T].vectorize(T.op.axis[0])
    return A, T, s


def test_printed_ir_is_linear_in_the_depth_of_an_inlined_chain():
    sizes = {}
    for depth in (8, 16):
        A, T, s = _chain(depth, 3, False)
        sizes[depth] = len(str(ts.lower(s, [A, T])))
    assert sizes[16] < 2.5 * sizes[8]
    A, T, s = _chain(100, 3, False)
    assert str(ts.lower(s, [A, T])).count("let ") == 99     # one per inlined stage


@pytest.mark.parametrize("vectorize", [False, True])
def test_an_inlined_chain_with_fan_in_matches_numpy(vectorize, rand):
    A, T, s = _chain(12, 3, vectorize)
    f = ts.build(s, [A, T], name=f"cse_chain_{vectorize}")
    a = rand(8)
    want = a.astype(np.float64)
    for _ in range(12):
        want = sum(want * (k + 1) for k in range(3)) * 0.25
    np.testing.assert_allclose(f(a), want, rtol=1e-4)
