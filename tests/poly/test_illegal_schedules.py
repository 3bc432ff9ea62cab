"""Illegal schedules: each raises ``ts.ScheduleError`` whose message names the stage and the loop (or axis)
involved, whether the primitive itself refuses it or the check run by ``lower``/``build``/``ts.check_schedule``.
"""
from __future__ import annotations

import re
from typing import Callable, NamedTuple

import pytest

import tesched as ts


def matmul(size: int = 16):
    a = ts.placeholder((size, size), name="A")
    b = ts.placeholder((size, size), name="B")
    k = ts.reduce_axis((0, size), name="k")
    c = ts.compute((size, size), lambda i, j: ts.sum(a[i, k] * b[k, j], axis=k), name="C")
    return a, b, c


def chain():
    """``x -> P -> Q -> R``, elementwise, R the output."""
    x = ts.placeholder((12,), name="x")
    p = ts.compute((12,), lambda i: x[i] + 1.0, name="P")
    q = ts.compute((12,), lambda i: p[i] * 2.0, name="Q")
    r = ts.compute((12,), lambda i: q[i] - 3.0, name="R")
    return x, p, q, r


def chain_schedule():
    """``chain()`` and a schedule of R, every stage at the root: ``s, (x, P, Q, R)``."""
    tensors = chain()
    return ts.create_schedule(tensors[-1].op), tensors


def diamond():
    """``x -> P``, ``P -> Q``, and ``R`` reads both P and Q."""
    x = ts.placeholder((12,), name="x")
    p = ts.compute((12,), lambda i: x[i] + 1.0, name="P")
    q = ts.compute((12,), lambda i: p[i] * 2.0, name="Q")
    r = ts.compute((12,), lambda i: p[i] + q[i], name="R")
    return x, p, q, r


# the schedules ----------------------------------------------------------------------------------------
def parallel_reduce_axis():
    _, _, c = matmul()
    s = ts.create_schedule(c.op)
    s[c].parallel(s[c].op.reduce_axis[0])


def vectorize_outer_reduce_loop():
    """Only an innermost reduction loop may be vectorized (each lane keeps its own partial sum)."""
    a, b, c = matmul()
    s = ts.create_schedule(c.op)
    ko, _ = s[c].split(s[c].op.reduce_axis[0], factor=4)
    s[c].vectorize(ko)
    ts.lower(s, [a, b, c])


def parallel_fused_reduce_loop():
    _, _, c = matmul()
    s = ts.create_schedule(c.op)
    ko, ki = s[c].split(s[c].op.reduce_axis[0], factor=4)
    s[c].parallel(s[c].fuse(ko, ki))


def parallel_conv_channel_reduction():
    x = ts.placeholder((1, 3, 6, 6), name="x")
    w = ts.placeholder((2, 3, 3, 3), name="w")
    rc, ry, rx = (ts.reduce_axis((0, e), name=n) for e, n in ((3, "rc"), (3, "ry"), (3, "rx")))
    conv = ts.compute((1, 2, 4, 4), lambda n, f, y, xx: ts.sum(x[n, rc, y + ry, xx + rx] * w[f, rc, ry, rx],
                                                                 axis=[rc, ry, rx]), name="conv")
    s = ts.create_schedule(conv.op)
    s[conv].parallel(rc)


def compute_at_non_consumer():
    _, p, q, r = diamond()
    other = ts.compute((12,), lambda i: q[i] + r[i], name="S")
    s = ts.create_schedule(other.op)
    s[q].compute_at(s[p], s[p].op.axis[0])


def compute_at_with_outside_reader():
    x, p, q, r = diamond()
    s = ts.create_schedule(r.op)
    io, _ = s[q].split(s[q].op.axis[0], factor=4)
    s[p].compute_at(s[q], io)         # R reads P too, outside Q's loop
    ts.lower(s, [x, r])


def compute_at_cycle():
    s, (_, _, q, r) = chain_schedule()
    s[q].compute_at(s[q], s[q].op.axis[0])


def compute_at_output():
    x, _, q, r = chain()
    s = ts.create_schedule([q.op, r.op])
    s[q].compute_at(s[r], s[r].op.axis[0])


def compute_at_loop_of_another_stage():
    s, (_, p, q, r) = chain_schedule()
    s[p].compute_at(s[q], s[r].op.axis[0])


def compute_at_inlined_stage():
    s, (x, p, q, r) = chain_schedule()
    s[p].compute_at(s[q], s[q].op.axis[0])
    s[q].compute_inline()
    ts.lower(s, [x, r])


def compute_at_reader_moved_by_cache_write():
    s, (x, p, q, r) = chain_schedule()
    s.cache_write(r, "local")     # R's body now runs in R.local, at the root, outside R's loop
    s[q].compute_at(s[r], s[r].op.axis[0])
    ts.lower(s, [x, r])


def inline_reduction():
    _, _, c = matmul()
    d = ts.compute(c.shape, lambda i, j: c[i, j] * 2.0, name="D")
    s = ts.create_schedule(d.op)
    s[c].compute_inline()


def inline_output():
    _, _, c = matmul()
    s = ts.create_schedule(c.op)
    s[c].compute_inline()


def argument_not_stored_in_full():
    s, (x, p, q, r) = chain_schedule()
    s[q].compute_at(s[r], s[r].op.axis[0])
    ts.lower(s, [x, q, r])


def rfactor_data_parallel_axis():
    _, _, c = matmul()
    s = ts.create_schedule(c.op)
    s.rfactor(c, s[c].op.axis[1])


def vectorize_after_cache_write_of_a_moved_loop():
    _, _, c = matmul()
    s = ts.create_schedule(c.op)
    _, inner = s[c].split(s[c].op.axis[0], factor=4)
    s.cache_write(c, "local")     # the split loops now belong to C.local
    s[c].vectorize(inner)


def annotated_then_split():
    a, b, c = matmul()
    s = ts.create_schedule(c.op)
    j = s[c].op.axis[1]
    s[c].vectorize(j)
    s[c].split(j, factor=8)
    ts.lower(s, [a, b, c])


def unroll_symbolic_extent():
    n = ts.var("n")
    x = ts.placeholder((n,), name="x")
    y = ts.compute((n,), lambda i: x[i] * 2.0, name="Y")
    s = ts.create_schedule(y.op)
    s[y].unroll(s[y].op.axis[0])
    ts.lower(s, [x, y])


def nparts_of_symbolic_extent():
    n = ts.var("n")
    x = ts.placeholder((n,), name="x")
    y = ts.compute((n,), lambda i: x[i] * 2.0, name="Y")
    s = ts.create_schedule(y.op)
    s[y].split(s[y].op.axis[0], nparts=4)
    ts.lower(s, [x, y])


def fuse_non_adjacent():
    x = ts.placeholder((4, 5, 6), name="x")
    y = ts.compute((4, 5, 6), lambda a, b, c: x[a, b, c] + 1.0, name="Y")
    s = ts.create_schedule(y.op)
    a, _, c = s[y].op.axis
    s[y].fuse(a, c)


def fuse_reduce_with_data_parallel():
    _, _, c = matmul()
    s = ts.create_schedule(c.op)
    i, j = s[c].op.axis
    s[c].vectorize(s[c].fuse(j, s[c].op.reduce_axis[0]))


def split_already_split():
    _, _, c = matmul()
    s = ts.create_schedule(c.op)
    i = s[c].op.axis[0]
    s[c].split(i, factor=4)
    s[c].split(i, factor=2)


def split_by_zero():
    _, _, c = matmul()
    s = ts.create_schedule(c.op)
    s[c].split(s[c].op.axis[0], factor=0)


def vectorize_parallel_loop():
    _, _, c = matmul()
    s = ts.create_schedule(c.op)
    i = s[c].op.axis[0]
    s[c].parallel(i)
    s[c].vectorize(i)


def parallel_inside_vectorized():
    x = ts.placeholder((8, 8), name="x")
    y = ts.compute((8, 8), lambda i, j: x[i, j] + 1.0, name="Y")
    s = ts.create_schedule(y.op)
    i, j = s[y].op.axis
    s[y].vectorize(i)
    s[y].parallel(j)
    ts.build(s, [x, y])


def dependence_parallel_reduce_loop():
    """Mark a reduce loop parallel behind the primitive's back: only the dependence check sees it."""
    a, b, c = matmul()
    s = ts.create_schedule(c.op)
    ko, _ = s[c].split(s[c].op.reduce_axis[0], factor=4)
    s[c].iter_var_attrs[ko] = "parallel"
    ts.lower(s, [a, b, c])


def dependence_vectorized_fused_reduce_loop():
    a, b, c = matmul()
    s = ts.create_schedule(c.op)
    i, j = s[c].op.axis
    ko, ki = s[c].split(s[c].op.reduce_axis[0], factor=4)
    fused = s[c].fuse(ko, ki)
    s[c].reorder(i, fused, j)
    s[c].vectorize(fused)
    ts.build(s, [a, b, c])


def dependence_final_sum_of_rfactor():
    x = ts.placeholder((40,), name="x")
    k = ts.reduce_axis((0, 40), name="k")
    total = ts.compute((1,), lambda i: ts.sum(x[k], axis=k), name="total")
    s = ts.create_schedule(total.op)
    _, ki = s[total].split(k, factor=8)
    s.rfactor(total, ki)
    s[total].iter_var_attrs[s[total].leaf_iter_vars[-1]] = "parallel"
    ts.lower(s, [x, total])


def dependence_check_on_demand():
    _, _, c = matmul()
    s = ts.create_schedule(c.op)
    _, ki = s[c].split(s[c].op.reduce_axis[0], factor=4)
    s[c].iter_var_attrs[ki] = "parallel"
    ts.check_schedule(s)


def dependence_producer_after_consumer():
    """Put the producer after its reader in the root sequence behind the schedule's back."""
    s, (x, p, q, r) = chain_schedule()
    stage = s[q]
    s.stages.remove(stage)
    s.stages.append(stage)
    ts.check_schedule(s)


class Illegal(NamedTuple):
    """A schedule that must be refused; its message must name ``stage`` and match ``loop`` (a regex)."""

    make: Callable[[], None]
    stage: str
    loop: str


def word(name: str) -> str:
    """A regex matching ``name`` not embedded in a longer name (``i`` does not match ``i.outer``)."""
    return rf"(?<![\w.]){re.escape(name)}(?![\w.])"


CASES = [
    Illegal(parallel_reduce_axis, "C", word("k")),
    Illegal(vectorize_outer_reduce_loop, "C", re.escape("loop k.outer")),
    Illegal(parallel_fused_reduce_loop, "C", word("k.outer.k.inner.fused")),
    Illegal(parallel_conv_channel_reduction, "conv", word("rc")),
    Illegal(compute_at_non_consumer, "Q", word("P.i")),
    Illegal(compute_at_with_outside_reader, "P", word("Q.i.outer")),
    Illegal(compute_at_cycle, "Q", word("Q.i")),
    Illegal(compute_at_output, "Q", word("R.i")),
    Illegal(compute_at_loop_of_another_stage, "Q", re.escape("'i'")),
    Illegal(compute_at_inlined_stage, "P", word("Q")),
    Illegal(compute_at_reader_moved_by_cache_write, "Q", word("R.i")),
    Illegal(inline_reduction, "C", word("k")),
    Illegal(inline_output, "C", re.escape("compute_inline")),
    Illegal(argument_not_stored_in_full, "Q", word("R")),
    Illegal(rfactor_data_parallel_axis, "C", re.escape("'j'")),
    Illegal(vectorize_after_cache_write_of_a_moved_loop, "C", r"i\.inner' is not a loop of C .*it is a loop of C\.local"),
    Illegal(annotated_then_split, "C", re.escape("loop j is marked vectorized")),
    Illegal(unroll_symbolic_extent, "Y", word("Y.i")),
    Illegal(nparts_of_symbolic_extent, "Y", word("Y.i")),
    Illegal(fuse_non_adjacent, "Y", word("a, c")),
    Illegal(fuse_reduce_with_data_parallel, "C", word("j.k.fused")),
    Illegal(split_already_split, "C", word("axis i")),
    Illegal(split_by_zero, "C", word("C.i")),
    Illegal(vectorize_parallel_loop, "C", re.escape("loop i is already parallel")),
    Illegal(parallel_inside_vectorized, "Y", re.escape("loop j of stage Y is parallel")),
    Illegal(dependence_parallel_reduce_loop, "C", re.escape("loop k.outer")),
    Illegal(dependence_vectorized_fused_reduce_loop, "C", re.escape("loop k.outer.k.inner.fused")),
    Illegal(dependence_final_sum_of_rfactor, "total", re.escape("loop k.inner.v")),
    Illegal(dependence_check_on_demand, "C", re.escape("loop k.inner")),
    Illegal(dependence_producer_after_consumer, "Q", r"R\[i=\d+\]"),
]


def case_id(case) -> str:
    illegal = case.values[0] if hasattr(case, "values") else case
    return illegal.make.__name__


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_illegal_schedule_raises_schedule_error_naming_stage_and_loop(case: Illegal):
    with pytest.raises(ts.ScheduleError) as err:
        case.make()
    message = str(err.value)
    assert re.search(rf"(?<![\w.]){re.escape(case.stage)}(?!\w)", message), message   # "Y" or "Y.i"
    assert re.search(case.loop, message), message


def test_there_are_at_least_fifteen_distinct_cases():
    assert len({case_id(c) for c in CASES}) >= 15


def test_dependence_messages_show_two_instances_and_the_broken_order():
    with pytest.raises(ts.ScheduleError) as err:
        dependence_parallel_reduce_loop()
    message = str(err.value)
    instances = re.findall(r"C\[i=\d+, j=\d+, k=\d+\]", message)
    assert len(instances) == 2 and instances[0] != instances[1], message
    assert "parallel" in message and "same element" in message, message
    with pytest.raises(ts.ScheduleError, match=r"R\[i=\d+\] would read a value before Q\[i=\d+\] writes it"):
        dependence_producer_after_consumer()


def test_a_failed_primitive_leaves_the_schedule_usable():
    """After a refused primitive the schedule still builds (the refusal changed nothing)."""
    import numpy as np
    a, b, c = matmul(8)
    s = ts.create_schedule(c.op)
    with pytest.raises(ts.ScheduleError):
        s[c].parallel(s[c].op.reduce_axis[0])
    with pytest.raises(ts.ScheduleError):
        s[c].fuse(s[c].op.axis[0], s[c].op.reduce_axis[0])
    s[c].parallel(s[c].op.axis[0])
    kernel = ts.build(s, [a, b, c], name="after_refusals")
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(kernel(x, y), x.astype(np.float64) @ y, rtol=1e-4, atol=1e-4)
