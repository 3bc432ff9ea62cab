"""Tests of tesched.schedule.schedule: what each primitive records, every schedule mistake (a ScheduleError naming
the stage and the loop), and matmul built with every primitive, checked against NumPy."""
import numpy as np
import pytest

import tesched as ts
from tesched.ir import nodes as ir
from tesched.ir.visitor import walk_stmts

N, M, K = 10, 7, 9       # deliberately not multiples of the split factors below


def matmul():
    A = ts.placeholder((N, K), name="A")
    B = ts.placeholder((K, M), name="B")
    k = ts.reduce_axis((0, K), name="k")
    C = ts.compute((N, M), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def pipeline():
    """A -> P (elementwise) -> Q (elementwise) -> R (reduction over Q and P), and the placeholder A."""
    A = ts.placeholder((8, 8), name="A")
    P = ts.compute((8, 8), lambda i, j: A[i, j] + 1.0, name="P")
    Q = ts.compute((8, 8), lambda i, j: P[i, j] * 2.0, name="Q")
    k = ts.reduce_axis((0, 8), name="k")
    R = ts.compute((8,), lambda i: ts.sum(Q[i, k] + P[i, k], axis=k), name="R")
    return A, P, Q, R


def leaf_names(stage):
    return [v.name for v in stage.leaf_iter_vars]


# what primitives record ---------------------------------------------------------------------------

def test_split_tile_fuse_reorder_record_loops():
    A, B, C = matmul()
    s = ts.create_schedule(C.op)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    assert leaf_names(s[C]) == ["i", "j", "k"]
    io, jo, ii, ji = s[C].tile(i, j, 4, 3)
    assert leaf_names(s[C]) == ["i.outer", "j.outer", "i.inner", "j.inner", "k"]
    fused = s[C].fuse(io, jo)
    assert fused.name == "i.outer.j.outer.fused"
    s[C].reorder(k, ji)
    assert leaf_names(s[C]) == ["i.outer.j.outer.fused", "i.inner", "k", "j.inner"]
    ko, ki = s[C].split(k, nparts=2)
    assert leaf_names(s[C])[2:4] == ["k.outer", "k.inner"]
    assert s[C].descendants(k) == [k, ko, ki]


def test_fuse_of_three_axes_and_list_arguments():
    A = ts.placeholder((2, 3, 4), name="A")
    B = ts.compute((2, 3, 4), lambda x, y, z: A[x, y, z], name="B")
    s = ts.create_schedule(B.op)
    fused = s[B].fuse(list(B.op.axis))
    assert fused.name == "x.y.fused.z.fused" and leaf_names(s[B]) == [fused.name]


def test_schedule_lookup_by_tensor_operation_or_stage():
    A, B, C = matmul()
    s = ts.create_schedule(C)
    assert s[C] is s[C.op] is s[s[C]]
    assert [st.name for st in s.stages] == ["A", "B", "C"]
    other = ts.compute((2,), lambda i: i * 1.0, name="other")
    with pytest.raises(ts.ScheduleError, match="other is not part of this schedule"):
        s[other]


def test_create_schedule_rejects_a_placeholder():
    A = ts.placeholder((3,), name="A")
    with pytest.raises(ts.ScheduleError, match="A is a placeholder"):
        ts.create_schedule(A.op)


# matmul with every primitive ----------------------------------------------------------------------

def _split_factor(s, C):
    i, j = C.op.axis
    s[C].split(i, factor=3)
    s[C].split(j, factor=4)
    s[C].split(C.op.reduce_axis[0], factor=4)


def _split_nparts(s, C):
    s[C].split(C.op.axis[0], nparts=3)
    s[C].split(C.op.reduce_axis[0], nparts=2)


def _tile_reorder(s, C):
    io, jo, ii, ji = s[C].tile(*C.op.axis, 4, 3)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=2)
    s[C].reorder(io, jo, ko, ii, ki, ji)


def _fuse_two_parallel(s, C):
    fused = s[C].fuse(*C.op.axis)
    s[C].parallel(fused)


def _fuse_three_vectorize(s, C):
    i, j = C.op.axis
    jo, ji = s[C].split(j, factor=3)
    fused = s[C].fuse(i, jo, ji)
    outer, inner = s[C].split(fused, factor=8)
    s[C].vectorize(inner)


def _fuse_reduction_loops(s, C):
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=2)
    s[C].fuse(ko, ki)


def _vectorize_inner_unroll_reduction(s, C):
    i, j = C.op.axis
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=3)
    s[C].reorder(i, ko, ki, j)
    s[C].unroll(ki)
    s[C].vectorize(j)
    s[C].parallel(i)


def _tile_parallel_unroll_vectorize(s, C):
    io, jo, ii, ji = s[C].tile(*C.op.axis, 4, 4)
    s[C].parallel(io)
    s[C].unroll(ii)
    s[C].vectorize(ji)


@pytest.mark.parametrize("apply", [_split_factor, _split_nparts, _tile_reorder, _fuse_two_parallel,
                                   _fuse_three_vectorize, _fuse_reduction_loops,
                                   _vectorize_inner_unroll_reduction, _tile_parallel_unroll_vectorize],
                         ids=lambda fn: fn.__name__.strip("_"))
def test_matmul_with_primitive(apply, rand):
    A, B, C = matmul()
    s = ts.create_schedule(C.op)
    apply(s, C)
    f = ts.build(s, [A, B, C], name=f"matmul{apply.__name__}")
    a, b = rand((N, K)), rand((K, M))
    np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-5)


def test_matmul_with_relu_computed_at_tiles(rand):
    A, B, C = matmul()
    R = ts.compute((N, M), lambda i, j: ts.maximum(C[i, j], 2.0), name="R")
    s = ts.create_schedule(R.op)
    io, jo, ii, ji = s[R].tile(*R.op.axis, 4, 4)
    s[R].parallel(io)
    s[C].compute_at(s[R], jo)
    ci, cj = s[C].op.axis
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=3)
    s[C].reorder(ko, ci, ki, cj)
    s[C].vectorize(cj)
    f = ts.build(s, [A, B, R], name="matmul_relu_at")
    a, b = rand((N, K)), rand((K, M))
    np.testing.assert_allclose(f(a, b), np.maximum(a @ b, 2.0), rtol=1e-5)


def test_matmul_of_inlined_and_root_producers(rand):
    A, B, _ = matmul()
    scaled = ts.compute((N, K), lambda i, k: A[i, k] * 0.5, name="scaled")
    shifted = ts.compute((K, M), lambda k, j: B[k, j] - 1.0, name="shifted")
    k = ts.reduce_axis((0, K), name="k")
    C = ts.compute((N, M), lambda i, j: ts.sum(scaled[i, k] * shifted[k, j], axis=k), name="C")
    s = ts.create_schedule(C.op)
    s[scaled].compute_inline()
    s[shifted].compute_at(s[C], C.op.axis[0])
    s[shifted].compute_root()
    s[C].tile(*C.op.axis, 3, 4)
    text = str(ts.lower(s, [A, B, C]))
    assert "produce scaled" not in text and "allocate shifted[float32 * 9 * 7]" in text
    f = ts.build(s, [A, B, C], name="matmul_inline_root")
    a, b = rand((N, K)), rand((K, M))
    np.testing.assert_allclose(f(a, b), (a * 0.5) @ (b - 1), rtol=1e-5, atol=1e-6)


def test_compute_root_undoes_inline_and_compute_at(rand):
    A, P, Q, R = pipeline()
    s = ts.create_schedule(R.op)
    s[P].compute_inline()
    s[Q].compute_at(s[R], R.op.axis[0])
    s[P].compute_root()
    s[Q].compute_root()
    text = str(ts.lower(s, [A, R]))
    assert "allocate P[float32 * 8 * 8]" in text and "allocate Q[float32 * 8 * 8]" in text
    f = ts.build(s, [A, R], name="compute_root_again")
    a = rand((8, 8))
    np.testing.assert_allclose(f(a), ((a + 1) * 2 + (a + 1)).sum(1), rtol=1e-5)


# schedule mistakes --------------------------------------------------------------------------------

def test_axis_of_another_stage():
    A, P, Q, R = pipeline()
    s = ts.create_schedule(R.op)
    with pytest.raises(ts.ScheduleError, match=r"split on stage R: axis i is not a loop of R \(its loops are: i, k\)"):
        s[R].split(P.op.axis[0], factor=2)
    with pytest.raises(ts.ScheduleError, match="parallel on stage Q: 'i' is not a loop of Q"):
        s[Q].parallel(R.op.axis[0])


def test_split_of_an_already_split_axis():
    A, P, Q, R = pipeline()
    s = ts.create_schedule(R.op)
    i = Q.op.axis[0]
    s[Q].split(i, factor=2)
    with pytest.raises(ts.ScheduleError, match="split on stage Q: axis i was already split or fused; "
                                              "use one of its current loops: i.outer, i.inner, j"):
        s[Q].split(i, factor=4)


@pytest.mark.parametrize("kwargs, message", [
    ({"factor": 0}, "split factor of Q.i must be positive"),
    ({"nparts": -1}, "split nparts of Q.i must be positive"),
    ({"factor": 2.5}, "split factor of Q.i must be a positive int"),
    ({"factor": 2, "nparts": 2}, "split of Q.i: give exactly one of factor, nparts"),
    ({}, "split of Q.i: give exactly one of factor, nparts"),
])
def test_split_arguments(kwargs, message):
    A, P, Q, R = pipeline()
    s = ts.create_schedule(R.op)
    with pytest.raises(ts.ScheduleError, match=message):
        s[Q].split(Q.op.axis[0], **kwargs)


def test_fuse_of_non_adjacent_axes():
    A, P, Q, R = pipeline()
    s = ts.create_schedule(R.op)
    i, j = Q.op.axis
    io, ii = s[Q].split(i, factor=2)
    with pytest.raises(ts.ScheduleError, match=r"fuse on stage Q: axes i.outer, j are not consecutive loops .*"
                                              r"current order: i.outer, i.inner, j"):
        s[Q].fuse(io, j)
    with pytest.raises(ts.ScheduleError, match="fuse on stage Q: axes j, i.outer are not consecutive"):
        s[Q].fuse(j, io)


def test_fuse_of_reduction_and_spatial_axes_is_a_reduction_loop():
    A, P, Q, R = pipeline()
    s = ts.create_schedule(R.op)
    fused = s[R].fuse(R.op.axis[0], R.op.reduce_axis[0])
    assert fused.name == "i.k.fused" and fused.iter_type == "comm_reduce"
    with pytest.raises(ts.ScheduleError, match=r"parallel on stage R: loop i.k.fused fuses data-parallel and"):
        s[R].parallel(fused)


def test_reorder_with_a_repeated_axis():
    A, P, Q, R = pipeline()
    s = ts.create_schedule(R.op)
    i, j = Q.op.axis
    with pytest.raises(ts.ScheduleError, match=r"reorder on stage Q: an axis is given twice \(j, j\)"):
        s[Q].reorder(j, j)


def test_primitives_on_a_placeholder():
    A, P, Q, R = pipeline()
    s = ts.create_schedule(R.op)
    with pytest.raises(ts.ScheduleError, match="compute_inline: A is an input"):
        s[A].compute_inline()


def test_compute_at_into_a_stage_that_does_not_read_the_producer():
    A, P, Q, R = pipeline()
    s = ts.create_schedule(R.op)
    with pytest.raises(ts.ScheduleError, match=r"compute_at of Q at P.i: P does not read Q, so no loop of P is "
                                              r"a legal place; stages that read it: R"):
        s[Q].compute_at(s[P], P.op.axis[0])


def test_compute_at_with_a_loop_of_another_stage():
    A, P, Q, R = pipeline()
    s = ts.create_schedule(R.op)
    with pytest.raises(ts.ScheduleError, match=r"compute_at of P: 'j' is not a loop of R \(its loops are: "
                                              r"i, k\); it is a loop of Q"):
        s[P].compute_at(s[R], Q.op.axis[1])
    with pytest.raises(ts.ScheduleError, match=r"compute_at of P at P\.i: a stage cannot be computed or stored inside itself"):
        s[P].compute_at(s[P], P.op.axis[0])


def test_compute_at_where_another_reader_is_outside_the_loop_and_no_loop_is_legal():
    A, P, Q, R = pipeline()
    s = ts.create_schedule(R.op)
    s[P].compute_at(s[Q], Q.op.axis[0])          # R reads P too, and R is not inside Q
    with pytest.raises(ts.ScheduleError, match=r"compute_at of P at Q.i: R read\(s\) P outside that loop.*"
                                              r"no loop of Q is legal"):
        ts.lower(s, [A, R])


def test_compute_at_where_another_reader_is_outside_the_loop_lists_legal_loops():
    A, P, Q, R = pipeline()
    s = ts.create_schedule(R.op)
    ko, ki = s[R].split(R.op.reduce_axis[0], factor=4)
    s[Q].compute_at(s[R], R.op.axis[0])          # Q (a reader of P) runs inside R.i only
    s[P].compute_at(s[R], ki)                     # deeper than Q: Q would read an incomplete P
    with pytest.raises(ts.ScheduleError, match=r"compute_at of P at R.k.inner: Q read\(s\) P outside that loop.*"
                                              r"legal loops of R: i\b"):
        ts.lower(s, [A, R])


def test_compute_inline_of_a_reduction():
    A, P, Q, R = pipeline()
    S = ts.compute((8,), lambda i: R[i] * 2.0, name="S")
    s = ts.create_schedule(S.op)
    with pytest.raises(ts.ScheduleError, match=r"compute_inline of R: it is a reduction \(over k\)"):
        s[R].compute_inline()


def test_compute_inline_and_compute_at_of_an_output():
    A, P, Q, R = pipeline()
    s = ts.create_schedule([R.op, Q.op])
    with pytest.raises(ts.ScheduleError, match="compute_inline of Q: it is an output of the schedule"):
        s[Q].compute_inline()
    with pytest.raises(ts.ScheduleError, match=r"compute_at of Q at R\.i: it is an output of the schedule"):
        s[Q].compute_at(s[R], R.op.axis[0])


def test_parallel_on_a_reduction_axis():
    A, P, Q, R = pipeline()
    s = ts.create_schedule(R.op)
    k = R.op.reduce_axis[0]
    with pytest.raises(ts.ScheduleError, match="parallel on stage R: loop k runs over a reduction axis"):
        s[R].parallel(k)
    ko, ki = s[R].split(k, factor=2)
    with pytest.raises(ts.ScheduleError, match="parallel on stage R: loop k.inner runs over a reduction axis"):
        s[R].parallel(ki)


def test_vectorize_on_an_innermost_reduction_axis_keeps_partial_sums_per_lane():
    A = ts.placeholder((3, 37), name="A")
    k = ts.reduce_axis((0, 37), name="k")
    S = ts.compute((3,), lambda i: ts.sum(A[i, k] * 2.0, axis=k), name="S")
    s = ts.create_schedule(S.op)
    ko, ki = s[S].split(k, factor=16)
    s[S].vectorize(ki)
    f = ts.build(s, [A, S], name="vector_sum")
    assert "ts_hadd_" in f.c_source
    a = np.random.default_rng(0).random((3, 37), dtype=np.float32)
    np.testing.assert_allclose(f(a), (a * 2).sum(1), rtol=1e-5)


def test_conflicting_loop_kinds():
    A, P, Q, R = pipeline()
    s = ts.create_schedule(R.op)
    s[Q].parallel(Q.op.axis[0])
    with pytest.raises(ts.ScheduleError, match="vectorize on stage Q: loop i is already parallel"):
        s[Q].vectorize(Q.op.axis[0])


def test_compute_at_cycle():
    A, P, Q, R = pipeline()
    s = ts.create_schedule(R.op)
    s[P].compute_at(s[Q], Q.op.axis[0])
    with pytest.raises(ts.ScheduleError, match=r"compute_at of Q at P.i: .*P"):
        s[Q].compute_at(s[P], P.op.axis[0])


def test_compute_at_a_stage_that_was_inlined():
    A, P, Q, R = pipeline()
    s = ts.create_schedule(R.op)
    s[P].compute_at(s[Q], Q.op.axis[0])
    s[Q].compute_inline()
    with pytest.raises(ts.ScheduleError, match="compute_at of P: Q was inlined"):
        ts.lower(s, [A, R])


@pytest.mark.parametrize("primitive", ["parallel", "vectorize", "unroll"])
def test_annotating_a_loop_then_splitting_it(primitive):
    A, P, Q, R = pipeline()
    s = ts.create_schedule(R.op)
    getattr(s[Q], primitive)(Q.op.axis[1])
    s[Q].split(Q.op.axis[1], factor=4)
    with pytest.raises(ts.ScheduleError, match=r"stage Q: loop j is marked \w+ but was later split or fused; "
                                              r"mark one of its current loops \(i, j.outer, j.inner\)"):
        ts.lower(s, [A, R])


def test_unroll_of_a_symbolic_extent():
    n = ts.var("n")
    A = ts.placeholder((n,), name="A")
    B = ts.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = ts.create_schedule(B.op)
    s[B].unroll(B.op.axis[0])
    with pytest.raises(ts.ScheduleError, match="unroll of B.i: its extent is not a constant"):
        ts.lower(s, [A, B])


def test_nparts_of_a_symbolic_extent():
    n = ts.var("n")
    A = ts.placeholder((n,), name="A")
    B = ts.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = ts.create_schedule(B.op)
    s[B].split(B.op.axis[0], nparts=4)
    with pytest.raises(ts.ScheduleError, match="split of B.i with nparts needs a constant extent"):
        ts.lower(s, [A, B])


def test_argument_lists_missing_an_input_or_an_output():
    A, P, Q, R = pipeline()
    s = ts.create_schedule(R.op)
    with pytest.raises(ValueError, match="input A is read but is not among the arguments"):
        ts.lower(s, [R])
    with pytest.raises(ValueError, match="output R is not among the arguments"):
        ts.build(s, [A])
    with pytest.raises(ValueError, match="tensor A appears twice"):
        ts.lower(s, [A, A, R])
    with pytest.raises(TypeError, match="arguments must be tensors"):
        ts.lower(s, [A, "R"])


def test_argument_that_is_not_stored_in_full():
    A, P, Q, R = pipeline()
    s = ts.create_schedule(R.op)
    s[Q].compute_at(s[R], R.op.axis[0])
    with pytest.raises(ts.ScheduleError, match="Q is an argument, so it must be stored in full.*computed at R"):
        ts.lower(s, [A, Q, R])


def test_loops_remember_the_primitive_that_made_them():
    A = ts.placeholder((16, 16), name="A")
    B = ts.compute((16, 16), lambda i, j: A[i, j] + 1.0, name="B")
    s = ts.create_schedule(B.op)
    i, j = s[B].op.axis
    io, jo, ii, ji = s[B].tile(i, j, 4, 8)
    f = s[B].fuse(io, jo)
    o, n = s[B].split(ii, nparts=2)
    st = s[B]
    assert st.loop_origin(i) == "axis i"
    assert st.loop_origin(ji) == "tile(i, j, 4, 8)"
    assert st.loop_origin(f) == "fuse(i.outer, j.outer)"
    assert st.loop_origin(o) == st.loop_origin(n) == "split(i.inner, nparts=2)"
    loops = [node for node in walk_stmts(ts.lower(s, [A, B]).body) if isinstance(node, ir.For)]
    assert [(loop.var.name, loop.origin) for loop in loops] == [
        ("i.outer.j.outer.fused", "fuse(i.outer, j.outer)"), ("i.inner.outer", "split(i.inner, nparts=2)"),
        ("i.inner.inner", "split(i.inner, nparts=2)"), ("j.inner", "tile(i, j, 4, 8)")]
