"""Tests of tesched.schedule.stage beyond recording: a failed primitive leaves the stage unchanged, and
reduce domains that do not start at 0 (Halide RDoms such as ``reduce_axis((5, 10))``) survive every
primitive, each checked against NumPy."""
import re

import numpy as np
import pytest

import tesched as ts
from tesched.schedule.kinds import LoopKind


def _snapshot(stage: ts.Stage) -> tuple:
    return (list(stage.leaf_iter_vars), list(stage.all_iter_vars), list(stage.relations),
            dict(stage.iter_var_attrs), stage.attach_type, stage.attach_stage, stage.attach_ivar)


def _two_stage():
    A = ts.placeholder((6, 8), name="A")
    B = ts.compute((6, 8), lambda i, j: A[i, j] * 2.0, name="B")
    C = ts.compute((6, 8), lambda i, j: B[i, j] + 1.0, name="C")
    return A, B, C


@pytest.mark.parametrize("misuse", [
    lambda s, B, C: s[C].tile(C.op.axis[0], C.op.axis[0], 2, 2),
    lambda s, B, C: s[C].tile(C.op.axis[0], C.op.axis[1], 2, 0),
    lambda s, B, C: s[C].fuse(C.op.axis[0], B.op.axis[1]),
    lambda s, B, C: s[C].reorder(C.op.axis[1], C.op.axis[1]),
    lambda s, B, C: s[C].split(C.op.axis[0], factor=2.5),
    lambda s, B, C: s[B].compute_at(s[C], B.op.axis[0]),
])
def test_a_failed_primitive_leaves_the_stage_unchanged(misuse):
    A, B, C = _two_stage()
    s = ts.create_schedule(C.op)
    before = {st.name: _snapshot(st) for st in s.stages}
    with pytest.raises(ts.ScheduleError):
        misuse(s, B, C)
    assert {st.name: _snapshot(st) for st in s.stages} == before


def _offset_sum(lo: int = 5, hi: int = 12):
    A = ts.placeholder((4, 16), name="A")
    k = ts.reduce_axis((lo, hi), name="k")
    B = ts.compute((4,), lambda i: ts.sum(A[i, k] * 2.0, axis=k), name="B")
    return A, k, B, (lambda a: 2 * a[:, lo:hi].sum(axis=1))


def _split(s, B, k):
    s[B].split(k, factor=3)


def _split_nparts(s, B, k):
    s[B].split(k, nparts=2)


def _reorder(s, B, k):
    s[B].reorder(k, B.op.axis[0])


def _unroll(s, B, k):
    s[B].unroll(k)


def _vectorize(s, B, k):
    s[B].vectorize(k)


def _rfactor(s, B, k):
    s.rfactor(B, k)


def _split_rfactor_inner(s, B, k):
    ko, ki = s[B].split(k, factor=3)
    s.rfactor(B, ki)


def _split_rfactor_outer(s, B, k):
    ko, ki = s[B].split(k, factor=3)
    s.rfactor(B, ko)


def _cache_write(s, B, k):
    s.cache_write(B, "local")


def _cache_write_split(s, B, k):
    BL = s.cache_write(B, "local")
    s[BL].split(s[BL].op.reduce_axis[0], factor=4)


@pytest.mark.parametrize("primitive", [_split, _split_nparts, _reorder, _unroll, _vectorize, _rfactor,
                                       _split_rfactor_inner, _split_rfactor_outer, _cache_write,
                                       _cache_write_split])
def test_an_offset_reduce_domain_survives(primitive, rand):
    A, k, B, reference = _offset_sum()
    s = ts.create_schedule(B.op)
    primitive(s, B, k)
    f = ts.build(s, [A, B], name=f"offset_{primitive.__name__.strip('_')}")
    a = rand((4, 16))
    np.testing.assert_allclose(f(a), reference(a), rtol=1e-5)


def test_an_offset_reduce_domain_fused_and_computed_at(rand):
    A = ts.placeholder((3, 9, 7), name="A")
    r = ts.reduce_axis((2, 6), name="r")
    q = ts.reduce_axis((1, 4), name="q")
    B = ts.compute((3,), lambda i: ts.sum(A[i, r, q], axis=[r, q]), name="B")
    C = ts.compute((3,), lambda i: B[i] * 3.0, name="C")
    s = ts.create_schedule(C.op)
    fused = s[B].fuse(r, q)
    s[B].split(fused, factor=5)
    s[B].compute_at(s[C], C.op.axis[0])
    f = ts.build(s, [A, C], name="offset_fused_at")
    a = rand((3, 9, 7))
    np.testing.assert_allclose(f(a), 3 * a[:, 2:6, 1:4].sum(axis=(1, 2)), rtol=1e-5)


def test_rfactor_of_an_unsplit_offset_axis_keeps_its_lower_bound(rand):
    """The issue's reproduction: k over [5, 10) summed A[0:5] after rfactor."""
    A = ts.placeholder((10,), name="A")
    k = ts.reduce_axis((5, 10), name="k")
    B = ts.compute((1,), lambda i: ts.sum(A[k], axis=k), name="B")
    s = ts.create_schedule(B.op)
    s.rfactor(B, k)
    a = np.arange(10, dtype=np.float32)
    np.testing.assert_allclose(ts.build(s, [A, B], name="rfactor_offset")(a), [a[5:].sum()])


@pytest.mark.parametrize("misuse, match", [
    (lambda s, A, B: s.cache_write(A, "local"), "cache_write of A: it is an input"),
    (lambda s, A, B: s.rfactor(A, B.op.axis[0]), "rfactor of A: it is an input"),
    (lambda s, A, B: s.cache_write(B, 3), "cache_write of B: scope must be a non-empty str"),
    (lambda s, A, B: s.cache_read(A, None, [B]), "cache_read of A: scope must be a non-empty str"),
    (lambda s, A, B: s.rfactor(B, B.op.reduce_axis[0], factor_axis=True), "rfactor of B: factor_axis"),
    (lambda s, A, B: s.rfactor(B, B.op.reduce_axis[0], factor_axis=3), "rfactor of B: factor_axis"),
])
def test_dataflow_misuse_names_the_stage(misuse, match):
    A, k, B, _ = _offset_sum()
    s = ts.create_schedule(B.op)
    with pytest.raises(ts.ScheduleError, match=match):
        misuse(s, A, B)


@pytest.mark.parametrize("outputs, error, match", [
    ([], ts.ScheduleError, "create_schedule: no outputs given"),
    ([42], TypeError, "create_schedule: expected a Tensor or an Operation, got int"),
])
def test_create_schedule_arguments(outputs, error, match):
    with pytest.raises(error, match=match):
        ts.create_schedule(outputs)


# fuse() of no axes, and fuse of data-parallel with reduction loops (TVM accepts both) ----------------
def test_fuse_of_no_axes_adds_an_outermost_loop_of_one_iteration(rand):
    A = ts.placeholder((6, 7), name="A")
    B = ts.compute((6, 7), lambda i, j: A[i, j] * 2.0, name="B")
    D = ts.compute((6,), lambda i: B[i, 0] + B[i, 6], name="D")
    s = ts.create_schedule(D.op)
    one = s[D].fuse()
    assert s[D].leaf_iter_vars[0] is one and s[D].extents()[id(one)] == 1
    s[B].compute_at(s[D], one)       # inside D's produce, around all of its loops
    kernel = ts.build(s, [A, D], name="fuse_nothing")
    text = str(kernel.lowered)
    assert text.index("produce D") < text.index("allocate B[float32 * 6 * 7]") < text.index("produce B"), text
    a = rand((6, 7))
    np.testing.assert_allclose(kernel(a), 2 * a[:, 0] + 2 * a[:, 6], rtol=1e-6)


@pytest.mark.parametrize("order, factor", [("ik", None), ("ik", 4), ("ki", 3)])
def test_fuse_of_a_data_loop_with_a_reduce_loop(rand, order, factor):
    A = ts.placeholder((6, 7), name="A")
    k = ts.reduce_axis((0, 7), name="k")
    C = ts.compute((6,), lambda i: ts.sum(A[i, k] * A[i, k], axis=k), name="C")
    s = ts.create_schedule(C.op)
    i = C.op.axis[0]
    if order == "ki":
        s[C].reorder(k, i)
    fused = s[C].fuse(*((i, k) if order == "ik" else (k, i)))
    assert fused.iter_type == "comm_reduce" and s[C].mixes_reduction(fused)
    if factor:
        outer, inner = s[C].split(fused, factor=factor)
        s[C].unroll(inner)
    with pytest.raises(ts.ScheduleError, match="parallel on stage C.*reduction"):
        s[C].parallel(s[C].leaf_iter_vars[0])
    with pytest.raises(ts.ScheduleError, match="vectorize on stage C.*fuses data-parallel and reduction"):
        s[C].vectorize(s[C].leaf_iter_vars[-1])
    with pytest.raises(ts.ScheduleError, match="rfactor of C.*fuses data-parallel and reduction"):
        s.rfactor(C, s[C].leaf_iter_vars[-1])
    kernel = ts.build(s, [A, C], name=f"fuse_mixed_{order}")
    a = rand((6, 7))
    np.testing.assert_allclose(kernel(a), (a.astype(np.float64) ** 2).sum(1), rtol=1e-5)


def test_fuse_of_two_reduce_loops_stays_a_reduction_that_rfactor_accepts(rand):
    A = ts.placeholder((5, 4, 6), name="A")
    k, r = ts.reduce_axis((0, 4), name="k"), ts.reduce_axis((0, 6), name="r")
    C = ts.compute((5,), lambda i: ts.sum(A[i, k, r], axis=[k, r]), name="C")
    s = ts.create_schedule(C.op)
    kr = s[C].fuse(k, r)
    assert not s[C].mixes_reduction(kr)
    ko, ki = s[C].split(kr, factor=8)
    rf = s.rfactor(C, ki)
    s[rf].vectorize(s[rf].op.axis[0])
    kernel = ts.build(s, [A, C], name="fuse_reduce_rfactor")
    a = rand((5, 4, 6))
    np.testing.assert_allclose(kernel(a), a.astype(np.float64).sum((1, 2)), rtol=1e-5)


# pragma: whitelisted C loop hints -----------------------------------------------------------------
def _scaled():
    A = ts.placeholder((16, 24), name="A")
    B = ts.compute((16, 24), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    return A, B, ts.create_schedule(B.op)


def _loop_pragmas(source: str) -> list[str]:
    return [line.strip() for line in source.splitlines() if "#pragma GCC" in line]


def test_pragma_ivdep_and_unroll_reach_c_as_gcc_loop_pragmas(rand):
    A, B, s = _scaled()
    i, j = B.op.axis
    s[B].pragma(i, "ivdep")
    s[B].pragma(j, "unroll", 4)
    kernel = ts.build(s, [A, B], name="pragma_hints")
    assert _loop_pragmas(kernel.c_source) == ["#pragma GCC ivdep", "#pragma GCC unroll 4"]
    assert "for i in [0, 16) pragma(ivdep=True)" in str(kernel.lowered)
    a = rand((16, 24))
    np.testing.assert_allclose(kernel(a), a * 2 + 1, rtol=1e-6)


@pytest.mark.parametrize("explicit", [True, False])
def test_pragma_unroll_explicit_false_leaves_unrolling_to_gcc(rand, explicit):
    A, B, s = _scaled()
    i, j = B.op.axis
    jo, ji = s[B].split(j, factor=8)
    s[B].unroll(ji)
    s[B].pragma(jo, "unroll_explicit", explicit)
    kernel = ts.build(s, [A, B], name=f"pragma_unroll_explicit_{explicit}")
    loops = kernel.c_source.count("for (int64_t")
    if explicit:    # the body of j.inner was copied: two loops, no unroll pragma
        assert loops == 2 and not _loop_pragmas(kernel.c_source)
    else:
        assert loops == 3 and _loop_pragmas(kernel.c_source) == ["#pragma GCC unroll 8"]
    a = rand((16, 24))
    np.testing.assert_allclose(kernel(a), a * 2 + 1, rtol=1e-6)


def test_pragma_ivdep_on_a_loop_carrying_a_dependence_is_refused():
    A = ts.placeholder((6, 7), name="A")
    k = ts.reduce_axis((0, 7), name="k")
    C = ts.compute((6,), lambda i: ts.sum(A[i, k], axis=k), name="C")
    s = ts.create_schedule(C.op)
    s[C].pragma(k, "ivdep")
    with pytest.raises(ts.ScheduleError, match="loop k of stage C has pragma ivdep, but its iterations depend"):
        ts.lower(s, [A, C])


@pytest.mark.parametrize("name, value, message", [
    ("unroll_and_jam", 2, "no unroll-and-jam loop pragma; write it as a schedule"),
    ("omp critical", None, "unknown pragma 'omp critical'"),
    ('ivdep"\n#include <stdio.h>', None, "unknown pragma"),
    ("ivdep", False, "'ivdep' takes True"),
    ("unroll", "4; system()", "'unroll' needs a count"),
    ("unroll", 0, "'unroll' needs a count"),
    ("unroll_explicit", 1, "'unroll_explicit' takes a bool"),
])
def test_pragma_refuses_what_is_not_whitelisted(name, value, message):
    A, B, s = _scaled()
    with pytest.raises(ts.ScheduleError, match=f"pragma on stage B, loop i: .*{re.escape(message)}"):
        s[B].pragma(B.op.axis[0], name, value)
    assert not s[B].pragmas


def test_pragma_on_an_openmp_loop_is_refused():
    A, B, s = _scaled()
    s[B].pragma(B.op.axis[0], "ivdep")
    s[B].parallel(B.op.axis[0])
    with pytest.raises(ts.ScheduleError, match="pragma 'ivdep' on stage B, loop i: the loop is parallel"):
        ts.lower(s, [A, B])


def test_pragma_vectorize_and_unroll_are_the_loop_kinds(rand):
    """TVM turns ``pragma(x, "vectorize")`` and ``pragma(x, "unroll")`` into those loop kinds."""
    A, B, s = _scaled()
    o, i = s[B].split(B.op.axis[1], factor=8)
    s[B].pragma(i, "vectorize")
    s[B].pragma(B.op.axis[0], "unroll")
    assert s[B].iter_var_attrs[i] is LoopKind.VECTORIZED
    assert s[B].iter_var_attrs[B.op.axis[0]] is LoopKind.UNROLLED
    assert not s[B].pragmas
    a = rand(A.shape)
    np.testing.assert_allclose(ts.build(s, [A, B])(a), a * 2 + 1, rtol=1e-6)
    with pytest.raises(ts.ScheduleError, match="pragma on stage B, loop j.outer: 'vectorize' takes no value"):
        s[B].pragma(o, "vectorize", 4)


def test_a_funcs_stages_are_its_pure_definition_and_each_update():
    """``s[f]`` is the pure definition's stage, ``s[f].update(k)`` update ``k``'s (from any of them)."""
    f = ts.Func((4,), "int32", name="f")
    x, = f.axis
    f[x] = 0
    r = ts.reduce_axis((0, 4), "r")
    f[r] += 1
    f[r] *= 2
    s = ts.create_schedule(f)          # a Func's schedule is that of its latest version
    assert s.outputs == [f.tensor.op] and s[f].op is f.op
    assert s[f].update(0).name == "f.update0" and s[f].update(1) is s[f.tensor]
    assert s[f.tensor].update(0) is s[f].update(0)
    with pytest.raises(ts.ScheduleError, match=r"update\(2\) of f: it has 2 update definition\(s\) in this "
                                               r"schedule \(0 to 1\)"):
        s[f].update(2)
    with pytest.raises(ts.ScheduleError, match=r"update\(0\) of g: it has 0 update definition\(s\)"):
        g = ts.compute((4,), lambda i: f[i] + 1, name="g")
        ts.create_schedule(g)[g].update(0)


def test_compute_with_takes_another_stage_of_the_schedule_and_one_of_its_loops():
    A = ts.placeholder((4,), name="A")
    f = ts.compute((4,), lambda i: A[i] + 1.0, name="f")
    g = ts.compute((4,), lambda i: f[i] * 2.0, name="g")
    s = ts.create_schedule(g)
    before = _snapshot(s[g])
    with pytest.raises(ts.ScheduleError, match=r"compute_with of g: the parent must be another stage"):
        s[g].compute_with(s[g], g.op.axis[0])
    with pytest.raises(ts.ScheduleError, match=r"compute_with of g: 'i' is not a loop of f \(its loops are: i\)"):
        s[g].compute_with(s[f], g.op.axis[0])
    with pytest.raises(ts.ScheduleError, match=r"compute_with: A is an input"):
        s[A].compute_with(s[f], f.op.axis[0])
    assert _snapshot(s[g]) == before
    s[g].compute_with(s[f], f.op.axis[0])
    assert s[g].with_stage is s[f] and s[g].with_ivar is f.op.axis[0]
    assert repr(s[g]) == "Stage(g, root, with f.i, loops: i (4))"
