"""compute_inline: an inlined chain shares the reads of each stage at each distinct index, so the lowered
IR and the C stay polynomial in the depth of the chain (a stencil chain of fan-in 2 was exponential)."""
import numpy as np

import tesched as ts


def _stencil_chain(depth: int, n: int = 24):
    """``f_k(i) = f_{k-1}(i) + f_{k-1}(i + 2)``, every stage but the last inlined."""
    A = ts.placeholder((n + 2 * depth,), name="A")
    cur = ts.compute((n + 2 * depth,), lambda i: A[i] * 1.5, name="f0")
    stages, size = [cur], n + 2 * depth
    for k in range(1, depth):
        prev, size = cur, size - 2
        cur = ts.compute((size,), lambda i, p=prev: p[i] + p[i + 2], name=f"f{k}")
        stages.append(cur)
    s = ts.create_schedule(cur.op)
    for st in stages[:-1]:
        s[st].compute_inline()
    return s, A, cur


def _reference(a: np.ndarray, depth: int) -> np.ndarray:
    cur = a.astype(np.float64) * 1.5
    for _ in range(1, depth):
        cur = cur[:-2] + cur[2:]
    return cur


def test_an_inlined_stencil_chain_stays_polynomial_in_its_depth():
    sizes = {}
    for depth in (8, 16):
        s, A, out = _stencil_chain(depth)
        sizes[depth] = len(str(ts.lower(s, [A, out])))
    # O(depth**2) distinct reads: doubling the depth multiplies the text by about 4 (2**8 = 256 before)
    assert sizes[16] < 6 * sizes[8], sizes


def test_an_inlined_stencil_chain_computes_what_numpy_does():
    depth = 12
    s, A, out = _stencil_chain(depth)
    f = ts.build(s, [A, out])
    a = np.random.default_rng(2).standard_normal(int(A.shape[0])).astype("float32")
    np.testing.assert_allclose(f(a), _reference(a, depth), rtol=1e-4, atol=1e-3)
