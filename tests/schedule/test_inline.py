"""compute_inline: an inlined chain shares the reads of each stage at each distinct index, so the lowered
IR and the C stay linear in the number of distinct values (a stencil chain of fan-in 2 was exponential in
its depth); Halide's depth of 100 lowers, builds and matches NumPy."""
import numpy as np
import pytest

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


def _distinct_values(depth: int) -> int:
    """How many (stage, offset) values the chain reads: ``f_k`` at ``depth - k`` offsets, the last stage once."""
    return sum(depth - k for k in range(depth))


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


@pytest.mark.slow
def test_an_inlined_stencil_chain_of_depth_100_is_linear_in_its_distinct_values():
    """Each distinct value is bound once (one ``let``, one C constant of one block), so the text per value
    stays the same from depth 50 to 100; the C block does not nest one level per binding."""
    per_value, lets = {}, {}
    for depth in (50, 100):
        s, A, out = _stencil_chain(depth)
        text = str(ts.lower(s, [A, out]))
        lets[depth] = text.count("let ")
        per_value[depth] = len(text) / _distinct_values(depth)
        assert lets[depth] <= _distinct_values(depth)
    assert lets[100] > 3 * lets[50]      # the chain really shares O(depth**2) values
    assert per_value[100] < 1.3 * per_value[50], per_value
    f = ts.build(s, [A, out])
    source = f.c_source
    assert source.count("const float t") == lets[100]
    assert max(len(line) - len(line.lstrip()) for line in source.splitlines()) < 40
    a = np.random.default_rng(3).random(int(A.shape[0]), dtype=np.float32)   # positive: no cancellation
    np.testing.assert_allclose(f(a), _reference(a, 100), rtol=1e-4)
