"""Loop-invariant parts of element offsets are named once before the innermost loop."""
import re

import numpy as np

import tesched as ts


def test_invariant_offsets_are_named_before_the_innermost_loop():
    n = 48
    A = ts.placeholder((n, n, n), name="A")
    B = ts.compute((n, n, n), lambda i, j, k: A[i, k, j] + A[i, j, k], name="B")
    s = ts.create_schedule(B.op)
    f = ts.build(s, [A, B], name="hoisted")
    a = np.random.default_rng(0).standard_normal((n, n, n)).astype(np.float32)
    np.testing.assert_allclose(f(a), a.transpose(0, 2, 1) + a, rtol=1e-6)
    source = f.c_source
    names = re.findall(r"const int64_t (\w+_off\w*) = ", source)
    assert names, source
    innermost = source[source.rindex("for (int64_t"):]
    assert all(name in innermost for name in names)
    # inside the loop, offsets are the named base plus what the loop changes
    assert re.search(r"A_2\[\(A_off\w* \+ \(48 \* k\w*\)\)\]", innermost), innermost


def test_offsets_reading_memory_are_not_hoisted():
    """An index read from memory is never part of a named offset."""
    idx = ts.placeholder((16,), "int32", name="idx")
    A = ts.placeholder((16, 16), name="A")
    B = ts.compute((16, 16), lambda i, j: A[idx[j], i], name="B")
    s = ts.create_schedule(B.op)
    f = ts.build(s, [idx, A, B], name="indirect")
    rng = np.random.default_rng(1)
    ix = rng.integers(0, 16, 16).astype(np.int32)
    a = rng.standard_normal((16, 16)).astype(np.float32)
    np.testing.assert_allclose(f(ix, a), a[ix, :].T, rtol=1e-6)
    assert not re.search(r"_off\w* = [^;]*idx", f.c_source), f.c_source
