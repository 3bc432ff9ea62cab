"""The dependence-based legality check (tesched.poly.deps): access relations, instance descriptions, and
which schedules ``check_legality`` accepts or refuses.

Refused schedules are made by editing a stage's loop kinds or the stage order directly, behind the
primitives' own checks, so that only the dependence analysis can catch them. Accepted schedules are
built and compared with NumPy.
"""
from __future__ import annotations

import re

import islpy as isl
import numpy as np
import pytest

import tesched as ts
from tesched.poly.deps import Accesses, describe
from tesched.poly.model import PolyModel

from .helpers import model_of

RTOL = ATOL = 1e-4


def stencil(size: int = 8):
    """``Q[i] = P[i] + P[i + 1]`` with ``P = 3 x``."""
    x = ts.placeholder((size,), name="x")
    p = ts.compute((size,), lambda i: x[i] * 3.0, name="P")
    q = ts.compute((size - 1,), lambda i: p[i] + p[i + 1], name="Q")
    return x, p, q


def matmul(m: int = 8, n: int = 8, k: int = 8):
    a = ts.placeholder((m, k), name="A")
    b = ts.placeholder((k, n), name="B")
    rk = ts.reduce_axis((0, k), name="k")
    c = ts.compute((m, n), lambda i, j: ts.sum(a[i, rk] * b[rk, j], axis=rk), name="C")
    return a, b, c


def stencil_at_tiles(size: int = 8):
    """``stencil`` with P computed at each 4-wide tile of Q (i.outer)."""
    x, p, q = stencil(size)
    s = ts.create_schedule(q.op)
    io, _ = s[q].split(q.op.axis[0], factor=4)
    s[p].compute_at(s[q], io)
    return s, [x, q], io


def stage_model(model: PolyModel, name: str):
    return next(sm for sm in model.stages if sm.name == name)


def relation(model: PolyModel, text: str) -> isl.UnionMap:
    return isl.UnionMap(model.param_prefix + text)


# access relations -------------------------------------------------------------------------------------
def test_reads_and_writes_of_root_stages():
    x, p, q = stencil()
    s = ts.create_schedule(q.op)
    model = model_of(s, [x, q])
    acc = Accesses(model)
    sp, sq = stage_model(model, "P"), stage_model(model, "Q")
    wp, wq = sp.main.name, sq.main.name
    expected_writes = relation(model, f"{{ {wp}[i] -> {sp.tag}[i] : 0 <= i < 8; "
                                      f"{wq}[i] -> {sq.tag}[i] : 0 <= i < 7 }}")
    expected_reads = relation(model, f"{{ {wq}[i] -> {sp.tag}[j] : 0 <= i < 7 and i <= j <= i + 1 }}")
    assert acc.writes.is_equal(expected_writes), acc.writes
    assert acc.reads.is_equal(expected_reads), acc.reads     # inputs are never written: no relation


def test_compute_at_storage_is_private_to_the_enclosing_iteration():
    """P computed at Q's i.outer writes ``P[i.outer, i]``: two tiles never share an element."""
    s, args, _ = stencil_at_tiles()
    model = model_of(s, args)
    acc = Accesses(model)
    sp = stage_model(model, "P")
    written = acc.writes.intersect_domain(isl.UnionSet(sp.main.domain))
    expected = relation(model, f"{{ {sp.main.name}[t, i] -> {sp.tag}[t, i] : "
                               "0 <= t <= 1 and 4t <= i <= 4t + 4 and i <= 7 }")
    assert written.is_equal(expected), written   # the tiles overlap at i = 4, each with its own copy


def test_a_reduction_update_reads_what_it_accumulates():
    a, b, c = matmul(3, 4, 5)
    s = ts.create_schedule(c.op)
    model = model_of(s, [a, b, c])
    acc = Accesses(model)
    sc = stage_model(model, "C")
    own = relation(model, f"{{ {sc.main.name}[i, j, k] -> {sc.tag}[i, j] : "
                          "0 <= i < 3 and 0 <= j < 4 and 0 <= k < 5 }")
    assert own.is_subset(acc.reads)
    assert acc.reads.intersect_domain(isl.UnionSet(sc.init.domain)).is_empty()   # init stores the identity


def test_a_non_affine_read_may_touch_every_element():
    x = ts.placeholder((8,), name="x")
    p = ts.compute((8,), lambda i: x[i] + 1.0, name="P")
    q = ts.compute((8,), lambda i: p[(i * i) % 8], name="Q")
    s = ts.create_schedule(q.op)
    model = model_of(s, [x, q])
    acc = Accesses(model)
    sp, sq = stage_model(model, "P"), stage_model(model, "Q")
    everything = relation(model, f"{{ {sq.main.name}[i] -> {sp.tag}[j] : 0 <= i < 8 and 0 <= j < 8 }}")
    elements = isl.UnionSet(model.tensor_domain(sp.tensor, sp.tag))
    assert acc.reads.intersect_range(elements).is_equal(everything), acc.reads


# descriptions of instances ----------------------------------------------------------------------------
def test_describe_uses_the_users_loop_and_axis_names():
    s, args, _ = stencil_at_tiles()
    model = model_of(s, args)
    assert describe(model, stage_model(model, "P").main.name, [1, 5]) == "P[i.outer=1, i=5]"
    assert describe(model, stage_model(model, "Q").main.name, [6]) == "Q[i=6]"


def test_describe_names_init_and_update_of_a_reduction():
    a, b, c = matmul()
    s = ts.create_schedule(c.op)
    model = model_of(s, [a, b, c])
    sc = stage_model(model, "C")
    assert describe(model, sc.init.name, [1, 2]) == "C (init)[i=1, j=2]"
    assert describe(model, sc.main.name, [1, 2, 3]) == "C[i=1, j=2, k=3]"


# refused schedules --------------------------------------------------------------------------------------
def parallel_k_outer():
    a, b, c = matmul()
    s = ts.create_schedule(c.op)
    ko, _ = s[c].split(s[c].op.reduce_axis[0], factor=4)
    s[c].iter_var_attrs[ko] = "parallel"
    return s, [a, b, c]


def test_a_parallel_reduce_loop_is_refused_with_a_true_example():
    s, args = parallel_k_outer()
    with pytest.raises(ts.ScheduleError, match=r"loop k\.outer of stage C is parallel") as err:
        ts.lower(s, args)
    found = re.findall(r"C\[i=(\d+), j=(\d+), k=(\d+)\]", str(err.value))
    assert len(found) == 2, err.value
    (i1, j1, k1), (i2, j2, k2) = [tuple(map(int, f)) for f in found]
    assert (i1, j1) == (i2, j2)              # the same element of C ...
    assert k1 // 4 != k2 // 4                # ... updated in two iterations of k.outer


def test_lower_build_and_check_raise_the_same_error():
    messages = set()
    for run in (lambda s, args: ts.lower(s, args), lambda s, args: ts.build(s, args),
                lambda s, args: ts.check_schedule(s)):
        s, args = parallel_k_outer()
        with pytest.raises(ts.ScheduleError, match=r"k\.outer") as err:
            run(s, args)
        messages.add(str(err.value))
    assert len(messages) == 1, messages


def test_a_vectorized_reduce_loop_inside_a_data_parallel_one_is_refused():
    a, b, c = matmul()
    s = ts.create_schedule(c.op)
    i, j = s[c].op.axis
    k = s[c].op.reduce_axis[0]
    s[c].reorder(i, k, j)
    s[c].iter_var_attrs[k] = "vectorized"
    with pytest.raises(ts.ScheduleError, match=r"loop k of stage C is vectorized"):
        ts.check_schedule(s)


def test_a_producer_scheduled_after_its_reader_is_refused():
    x, p, q = stencil()
    s = ts.create_schedule(q.op)
    stage = s[p]
    s.stages.remove(stage)
    s.stages.append(stage)                   # P now runs after Q in the root sequence
    with pytest.raises(ts.ScheduleError,
                       match=r"Q\[i=\d+\] would read a value before P\[i=\d+\] writes it"):
        ts.lower(s, [x, q])


def test_after_rfactor_only_the_partial_results_may_be_computed_in_parallel():
    """C.rf[ko, i, j] holds one partial sum per k.outer: parallel over ko is legal; C's reduction over
    them (loop k.outer.v) marked parallel would race on each C[i, j]."""
    a, b, c = matmul(4, 4, 24)
    s = ts.create_schedule(c.op)
    ko, _ = s[c].split(s[c].op.reduce_axis[0], factor=8)
    partial = s.rfactor(c, ko)
    s[partial].parallel(s[partial].op.axis[0])
    ts.check_schedule(s)
    s[c].iter_var_attrs[s[c].leaf_iter_vars[-1]] = "parallel"
    with pytest.raises(ts.ScheduleError, match=r"loop k\.outer\.v of stage C is parallel"):
        ts.check_schedule(s)


# accepted schedules -------------------------------------------------------------------------------------
def test_vectorizing_the_data_parallel_loop_inside_the_reduction_is_accepted():
    a, b, c = matmul(8, 16, 6)
    s = ts.create_schedule(c.op)
    i, j = s[c].op.axis
    k = s[c].op.reduce_axis[0]
    s[c].reorder(i, k, j)
    s[c].vectorize(j)
    s[c].parallel(i)
    kernel = ts.build(s, [a, b, c], name="deps_gemm")
    rng = np.random.default_rng(0)
    da = rng.standard_normal((8, 6)).astype(np.float32)
    db = rng.standard_normal((6, 16)).astype(np.float32)
    np.testing.assert_allclose(kernel(da, db), da.astype(np.float64) @ db, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("kind", ["parallel", "vectorize"])
def test_a_loop_enclosing_a_private_producer_buffer_carries_no_dependence(kind):
    """P's buffer is private to each iteration of Q's i.outer, so that loop may run in parallel even
    though neighbouring tiles compute overlapping parts of P."""
    s, args, io = stencil_at_tiles(22)
    getattr(s[args[1]], kind)(io)
    kernel = ts.build(s, args, name=f"deps_private_{kind}")
    data = np.random.default_rng(1).standard_normal(22).astype(np.float32)
    np.testing.assert_allclose(kernel(data), 3 * (data[:-1].astype(np.float64) + data[1:]), rtol=RTOL, atol=ATOL)


def test_parallel_readers_of_a_non_affine_access_are_accepted():
    x = ts.placeholder((8,), name="x")
    p = ts.compute((8,), lambda i: x[i] + 1.0, name="P")
    q = ts.compute((8,), lambda i: p[(i * i) % 8], name="Q")
    s = ts.create_schedule(q.op)
    s[q].parallel(s[q].op.axis[0])
    s[p].parallel(s[p].op.axis[0])
    kernel = ts.build(s, [x, q], name="deps_gather")
    data = np.arange(8, dtype=np.float32)
    np.testing.assert_allclose(kernel(data), data[(np.arange(8) ** 2) % 8] + 1)


@pytest.mark.parametrize("reducer", ["sum", "max"])
@pytest.mark.parametrize("length, factor", [(32, 8), (37, 8)])
def test_a_vectorized_innermost_reduction_loop_is_accepted(reducer, length, factor):
    """Each lane keeps its own partial result, so the innermost reduction loop may be vectorized."""
    x = ts.placeholder((5, length), name="x")
    k = ts.reduce_axis((0, length), name="k")
    rows = ts.compute((5,), lambda i: getattr(ts, reducer)(x[i, k], axis=k), name="rows")
    s = ts.create_schedule(rows.op)
    _, ki = s[rows].split(k, factor=factor)
    s[rows].vectorize(ki)
    kernel = ts.build(s, [x, rows], name=f"deps_vector_{reducer}")
    assert "vectorized for k.inner" in str(kernel.lowered)
    data = np.random.default_rng(length).standard_normal((5, length)).astype(np.float32)
    expected = getattr(data.astype(np.float64), reducer)(axis=1)
    np.testing.assert_allclose(kernel(data), expected, rtol=RTOL, atol=ATOL)
