"""Explicit SIMD of vectorized tuple reductions (tesched.transform.tuple_reduction): argmax/argmin along a
vectorized reduce loop, and user reducers of two values, against NumPy (ties, NaN, sizes below, at and
above the vector width, sizes known only at run time)."""
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tesched as ts
from tesched.target import current_target

pytestmark = pytest.mark.usefixtures("host_target")   # tests of the SIMD code and layouts this CPU gets


def lanes(dtype: str = "float32") -> int:
    """The lanes of the vectors of ``dtype`` on this target (0: no explicit SIMD)."""
    return current_target().vector_bytes // np.dtype(dtype).itemsize


def arg_kernel(which: str, m, n, dtype: str = "float32", parallel: bool = False):
    val = ts.placeholder((m, n), dtype, name="val")
    k = ts.reduce_axis((0, n), name="k")
    index, best = ts.compute((m,), lambda i: getattr(ts, which)(val[i, k], axis=k), name="best")
    s = ts.create_schedule(index.op)
    if parallel:
        s[index].parallel(s[index].op.axis[0])
    s[index].vectorize(k)
    return ts.build(s, [val, index, best], name=f"{which}_{dtype}_lanes")


@lru_cache(maxsize=None)
def symbolic_kernel(which: str):
    """One kernel for every shape: the reduce loop's trip count is known at run time only."""
    return arg_kernel(which, ts.var("m"), ts.var("n"))


def with_ties_and_nan(values: np.ndarray, rng: np.random.Generator, nan_rows: int) -> np.ndarray:
    """``values`` rounded to few distinct numbers (many ties), NaN at random places of the first rows."""
    values = np.round(values * 2) / 2
    m, n = values.shape
    for row in range(min(nan_rows, m)):
        values[row, rng.integers(0, n, size=rng.integers(1, 3))] = np.nan
    return values


def check_arg(which: str, values: np.ndarray, got) -> None:
    index, best = got
    np.testing.assert_array_equal(index, getattr(np, which)(values, axis=1))   # the first index, NaN first
    np.testing.assert_array_equal(best, getattr(np, which.replace("arg", ""))(values, axis=1))


@pytest.mark.parametrize("which", ["argmax", "argmin"])
@pytest.mark.parametrize("n_lanes, extra", [(0, 5), (1, 0), (1, 3), (4, 0), (6, 7)])
def test_vectorized_argmax_matches_numpy_on_ties_and_nan(which, n_lanes, extra):
    """Sizes under one vector (scalar loop), one vector, several, and a scalar remainder."""
    width = max(lanes(), 1)
    m, n = 7, n_lanes * width + extra
    f = arg_kernel(which, m, n, parallel=True)
    rng = np.random.default_rng(n)
    values = with_ties_and_nan(rng.standard_normal((m, n)).astype(np.float32), rng, nan_rows=2)
    values[-1] = 1.5                    # one value repeated: index 0
    values[-2, [n - 1, n // 2]] = 9.0   # a tie of the largest value in two lanes
    values[-3, [n - 1, n // 2]] = -9.0
    check_arg(which, values, f(values))
    if width > 1:
        assert ("k_lanes0" in f.c_source) == (n >= width), f.c_source


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_vectorized_argmax_of_other_element_types(dtype, rand):
    m, n = 5, 3 * max(lanes(dtype), 1) + 1
    f = arg_kernel("argmax", m, n, dtype)
    values = rand((m, n), dtype, -3, 3)
    if dtype == "float64":
        values[1, 4] = np.nan
    check_arg("argmax", values, f(values))
    if lanes(dtype) > 1:
        assert "k_lanes0" in f.c_source


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.sampled_from(["argmax", "argmin"]), m=st.integers(1, 4), n=st.integers(1, 80),
       seed=st.integers(0, 2 ** 16), nan_rows=st.integers(0, 2))
def test_vectorized_argmax_of_run_time_sizes_matches_numpy(which, m, n, seed, nan_rows):
    """One kernel with symbolic sizes: full vectors when the row is long enough, the scalar loop after."""
    rng = np.random.default_rng(seed)
    values = with_ties_and_nan(rng.standard_normal((m, n)).astype(np.float32), rng, nan_rows)
    check_arg(which, values, symbolic_kernel(which)(values))


def test_vectorized_two_value_comm_reducer():
    """A user reducer of (float32 sum, int32 maximum): lanes of partial sums and maxima."""
    sum_and_max = ts.comm_reducer(lambda x, y: (x[0] + y[0], ts.max(x[1], y[1])),
                                  lambda t0, t1: (ts.const(0, t0), ts.min_value(t1)), name="sum_and_max")
    m, n = 4, 5 * max(lanes(), 1) + 3
    a = ts.placeholder((m, n), name="a")
    b = ts.placeholder((m, n), "int32", name="b")
    k = ts.reduce_axis((0, n), name="k")
    total, top = ts.compute((m,), lambda i: sum_and_max((a[i, k], b[i, k] * 2), axis=k), name="R")
    s = ts.create_schedule(total.op)
    s[total].vectorize(k)
    f = ts.build(s, [a, b, total, top], name="sum_and_max_lanes")
    rng = np.random.default_rng(1)
    av = rng.standard_normal((m, n)).astype(np.float32)
    bv = rng.integers(-1000, 1000, (m, n)).astype(np.int32)
    got_total, got_top = f(av, bv)
    np.testing.assert_allclose(got_total, av.astype(np.float64).sum(axis=1), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got_top, (bv * 2).max(axis=1))
    if lanes() > 1:
        assert "k_lanes1" in f.c_source


def test_a_tuple_reduction_with_where_keeps_the_scalar_loop(rand):
    """``where`` guards the reduced values (they may read outside the tensor elsewhere): scalar, correct."""
    m, n = 3, 4 * max(lanes(), 1)
    val = ts.placeholder((m, n), name="val")
    k = ts.reduce_axis((0, n), name="k")
    index, best = ts.compute((m,), lambda i: ts.argmax(val[i, k], axis=k, where=k % 3 != 1), name="best")
    s = ts.create_schedule(index.op)
    s[index].vectorize(k)
    f = ts.build(s, [val, index, best], name="argmax_where")
    values = rand((m, n))
    masked = np.where(np.arange(n) % 3 != 1, values, -np.inf)
    check_arg("argmax", masked, f(values))
    assert "k_lanes0" not in f.c_source
