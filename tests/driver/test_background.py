"""Kernels compiled in the background (tesched.driver.background): the same kernels as ``build``, compiles
running at once, one compile for one C source asked for twice, errors at the right moment."""
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import tesched as ts
from tesched.driver import background
from tesched.errors import BuildError

pytestmark = pytest.mark.usefixtures("isolated_cache")


def scaled(factor, name):
    """``B = A * factor + A[::-1]``, scheduled, named ``name`` (unique names: not in the cache yet)."""
    A = ts.placeholder((7, 5), name="A")
    B = ts.compute((7, 5), lambda i, j: A[i, j] * factor + A[6 - i, j], name="B")
    s = ts.create_schedule(B.op)
    s[B].vectorize(B.op.axis[1])
    return s, [A, B]


def test_pending_kernels_compute_what_build_does():
    a = np.random.default_rng(0).standard_normal((7, 5)).astype(np.float32)
    pending = [background.build_later(*scaled(k + 0.5, f"later_{k}"), name=f"later_{uuid.uuid4().hex[:8]}")
               for k in range(3)]
    for k, p in enumerate(pending):
        kernel = p.result()
        np.testing.assert_allclose(kernel(a), a * (k + 0.5) + a[::-1], rtol=1e-5, atol=1e-6)
        assert kernel.compiled and p.done() and not p.failed() and p.result() is kernel
    again = background.build_later(*scaled(0.5, "later_0"), name=pending[0].result().name).result()
    assert not again.compiled and again.cache_key == pending[0].result().cache_key


def test_compiles_run_at_once_and_one_source_compiles_once(monkeypatch):
    """Two distinct sources compile at the same time (each waits at a barrier for the other: compiles one
    after the other would break it); the same source asked for again joins the running compile."""
    barrier, calls = threading.Barrier(2, timeout=10), []
    compile_c = background.compile_c

    def meeting(src, target):
        calls.append(src.name)
        barrier.wait()
        return compile_c(src, target)

    monkeypatch.setattr(background, "compile_c", meeting)
    monkeypatch.setattr(background, "_pool", ThreadPoolExecutor(2))
    tag = uuid.uuid4().hex[:8]
    first = background.build_later(*scaled(2.0, "a"), name=f"pair_a_{tag}")
    twin = background.build_later(*scaled(2.0, "a"), name=f"pair_a_{tag}")
    second = background.build_later(*scaled(3.0, "b"), name=f"pair_b_{tag}")
    a = np.ones((7, 5), np.float32)
    np.testing.assert_allclose(first.result()(a), 3 * a)
    np.testing.assert_allclose(second.result()(a), 4 * a)
    assert twin.result().compiled is False and first.result().compiled and twin.result().cache_key == first.result().cache_key
    assert sorted(calls) == sorted([f"pair_a_{tag}", f"pair_b_{tag}"])


def test_lowering_errors_raise_at_once_and_compile_errors_at_result(monkeypatch):
    s, (A, B) = scaled(1.0, "bad")
    with pytest.raises(ValueError, match="input A is read but is not among the arguments"):
        background.build_later(s, [B], name="missing_input")
    with pytest.raises(TypeError, match="args"):
        background.build_later(s)

    def broken(src, target):
        raise BuildError(f"C compilation of {src.name} failed: no compiler today")

    monkeypatch.setattr(background, "compile_c", broken)
    pending = background.build_later(*scaled(5.0, "c"), name=f"broken_{uuid.uuid4().hex[:8]}")
    with pytest.raises(BuildError, match="no compiler today"):
        pending.result()
    assert pending.failed()
    with pytest.raises(ValueError, match="CPU targets"):
        background.build_later(*scaled(1.0, "gpu"), target="opencl")


def test_parallel_compiles_leave_standard_output_alone(capsys):
    """cffi's writer announces every file it writes: silenced without swapping sys.stdout, which two
    compiles at once would leave replaced."""
    stdout = __import__("sys").stdout
    tag = uuid.uuid4().hex[:8]
    pending = [background.build_later(*scaled(k + 1.0, f"out_{k}"), name=f"out_{k}_{tag}") for k in range(4)]
    for p in pending:
        p.result()
    assert __import__("sys").stdout is stdout and "generating" not in capsys.readouterr().out
