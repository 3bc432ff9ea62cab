"""Tests of tesched.driver.threads: set_num_threads validates its argument, and the count is process-wide
(a kernel called from another Python thread uses it, as with PyTorch's torch.set_num_threads)."""
import threading

import numpy as np
import pytest

import tesched as ts
from tesched.driver.threads import max_threads


@pytest.fixture
def restore_threads():
    before = ts.get_num_threads()
    yield
    ts.set_num_threads(before)


@pytest.mark.parametrize("bad, error, match", [
    (0, ValueError, "between 1 and"), (-1, ValueError, "between 1 and"), (100000, ValueError, "got 100000"),
    (2 ** 32 + 3, ValueError, "got 4294967299"), (True, TypeError, "must be an int, got bool True"),
    (1.5, TypeError, "got float 1.5"), ("2", TypeError, "got str '2'"),
])
def test_set_num_threads_validates(restore_threads, bad, error, match):
    before = ts.get_num_threads()
    with pytest.raises(error, match=f"set_num_threads: .*{match}"):
        ts.set_num_threads(bad)
    assert ts.get_num_threads() == before


def test_the_bound_is_generous_for_this_machine():
    assert max_threads() >= 64


def test_the_count_is_process_wide(restore_threads, rand):
    A = ts.placeholder((64,), name="A")
    B = ts.compute((64,), lambda i: A[i] * 2.0, name="B")
    s = ts.create_schedule(B.op)
    s[B].parallel(B.op.axis[0])
    f = ts.build(s, [A, B], name="threads_process_wide")
    a = rand(64)
    seen: list[int] = []

    def work() -> None:
        out = f(a)
        np.testing.assert_allclose(out, 2 * a)
        seen.append(ts.get_num_threads())

    for n in (1, 3):
        ts.set_num_threads(n)
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
        assert seen[-1] == n
