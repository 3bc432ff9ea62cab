"""Tests of tesched.driver.allocations: a heap buffer that cannot be allocated raises MemoryError naming
the buffer and its size (an error code from the kernel, never a crash), and byte counts that overflow
int64 are refused before the call. Each case runs in a child interpreter, so a regression that crashes
fails the test instead of the suite."""
import pytest

PIPELINE = """
    import numpy as np, tesched as ts
    n = ts.var("n")
    V = ts.placeholder((n,), name="V")
    outer = ts.compute({shape}, lambda *ix: V[ix[0]] * V[ix[-1]], name="outer")
    k = ts.reduce_axis((0, n), name="k")
    R = ts.compute((n,), lambda i: ts.sum(outer[{index}], axis=k), name="R")
    s = ts.create_schedule(R.op)
    {schedule}
    f = ts.build(s, [V, R], name="huge_intermediate_{tag}")
    v = np.ones({size}, np.float32)
    try:
        f(v)
    except MemoryError as err:
        print("MemoryError:", err)
    small = np.arange(5, dtype=np.float32)
    np.testing.assert_allclose(f(small), {reference}, rtol=1e-5)
    print("small ok")
"""


@pytest.mark.parametrize("tag, schedule", [("root", ""), ("parallel", "s[R].parallel(R.op.axis[0])")])
def test_an_intermediate_too_large_for_memory_raises_memory_error(run_python, isolated_cache, tag, schedule):
    done = run_python(PIPELINE.format(shape="(n, n)", index="i, k", schedule=schedule, tag=tag, size=600_000,
                                      reference="small * small.sum()"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "MemoryError: huge_intermediate" in done.stdout
    assert "buffer outer of 1,440,000,000,000 bytes (float32[600000, 600000])" in done.stdout
    assert "small ok" in done.stdout


def test_a_byte_count_overflowing_int64_is_refused_before_the_call(run_python, isolated_cache):
    done = run_python(PIPELINE.format(shape="(n, n, n)", index="i, k, k", schedule="", tag="cube",
                                      size=3_000_000, reference="small * small.sum()"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "MemoryError: huge_intermediate_cube: cannot allocate buffer outer of 108,000,000,000,000,000,000 " \
           "bytes" in done.stdout
