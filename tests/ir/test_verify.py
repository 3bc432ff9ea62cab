"""Tests of tesched.ir.verify: lowered functions pass it after every pass (the suite runs with
TESCHED_VERIFY=1), and each invariant it states catches the IR that breaks it, naming the pass."""
import re
from dataclasses import replace

import pytest

import tesched as ts
from tesched.errors import InternalError
from tesched.ir import nodes as ir
from tesched.ir.verify import verify
from tesched.ir.kinds import LoopKind
from tesched.ir.visitor import map_stmt, walk_stmts
from tesched.te.expr import Binary, Select, Var
from tesched.te.tensor import TensorRead


def _lowered():
    n = ts.var("n")
    A = ts.placeholder((n, 16), name="A")
    B = ts.compute((n, 16), lambda i, j: A[i, j] * 2.0, name="B")
    C = ts.compute((n, 16), lambda i, j: B[i, j] + 1.0, name="C")
    s = ts.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    return ts.lower(s, [A, C], name="chain"), A


def _check(func, body):
    verify(body, func.args, func.params, (), "a test pass")


def _stores(body):
    return [s for s in walk_stmts(body) if isinstance(s, ir.Store)]


def test_a_lowered_function_passes():
    func, _ = _lowered()
    _check(func, func.body)


def test_a_buffer_outside_its_allocation_is_caught():
    func, _ = _lowered()
    store = _stores(func.body)[-1]
    stray = ir.Buffer("stray", store.buffer.shape, store.buffer.dtype, ir.BufferScope.LOCAL)
    body = map_stmt(func.body, on_stmt=lambda s: replace(s, buffer=stray) if s is store else None)
    with pytest.raises(InternalError, match="'a test pass'.*buffer stray is accessed where it is neither"):
        _check(func, body)


def test_a_variable_out_of_scope_is_caught():
    func, _ = _lowered()
    store = _stores(func.body)[-1]
    ghost = Var("ghost", "float32")
    body = map_stmt(func.body, on_stmt=lambda s: replace(s, value=ghost) if s is store else None)
    with pytest.raises(InternalError, match="variable ghost is used outside"):
        _check(func, body)


def test_a_surviving_tensor_read_is_caught():
    func, A = _lowered()
    store = _stores(func.body)[-1]
    read = TensorRead(A, store.indices[:2] if len(store.indices) == 2 else (store.indices[0], store.indices[0]))
    body = map_stmt(func.body, on_stmt=lambda s: replace(s, value=read) if s is store else None)
    with pytest.raises(InternalError, match="a read of tensor A survived lowering"):
        _check(func, body)


def test_a_store_of_another_type_and_a_wrong_index_count_are_caught():
    func, _ = _lowered()
    store = _stores(func.body)[-1]
    as_double = map_stmt(func.body, on_stmt=lambda s: replace(s, value=ts.const(1.0, "float64"))
                         if s is store else None)
    with pytest.raises(InternalError, match="a store of float64 into buffer C of float32"):
        _check(func, as_double)
    three = map_stmt(func.body, on_stmt=lambda s: replace(s, indices=(store.indices[0],) * 3) if s is store else None)
    with pytest.raises(InternalError, match="buffer C of 2 dimensions is accessed with 3 indices"):
        _check(func, three)


def test_vector_widths_must_match():
    func, _ = _lowered()
    store = _stores(func.body)[-1]
    mixed = Binary("add", ir.Broadcast(ts.const(1.0, "float32"), 8), ir.Broadcast(ts.const(2.0, "float32"), 4),
                   "float32x8")
    body = map_stmt(func.body, on_stmt=lambda s: ir.VStore(s.buffer, s.indices[0], mixed) if s is store else None)
    with pytest.raises(InternalError, match="operands of add have types float32x8 and float32x4"):
        _check(func, body)


def test_the_pipeline_names_the_pass_that_broke_an_invariant(monkeypatch):
    """A pass of the pipeline that leaves a stray variable is caught right after it, by name."""
    from tesched.lower import pipeline

    def breaks(func, target):
        ghost = Var("ghost", "float32")
        store = _stores(func.body)[-1]
        return replace(func, body=map_stmt(func.body, on_stmt=lambda s: replace(s, value=ghost) if s is store else None))

    monkeypatch.setenv("TESCHED_VERIFY", "1")
    passes = pipeline.PASSES + (pipeline.Pass("a broken pass", breaks, pipeline.Phase.BUILD),)
    monkeypatch.setattr(pipeline, "PASSES", passes)
    func, _ = _lowered()
    with pytest.raises(InternalError, match="after the lowering pass 'a broken pass': variable ghost"):
        pipeline.lower_for_target(func, ts.Target("c"))


def _vector_func():
    A = ts.placeholder((4, 16), name="A")
    B = ts.compute((4, 16), lambda i, j: A[i, j] + 1.0, name="B")
    s = ts.create_schedule(B.op)
    s[B].vectorize(B.op.axis[1])
    return ts.lower(s, [A, B], name="vec")


def _loops(body):
    return [s for s in walk_stmts(body) if isinstance(s, ir.For)]


def test_select_conversion_and_assignment_widths_must_match():
    func = _vector_func()
    store = _stores(func.body)[-1]
    wide, narrow = ir.Broadcast(ts.const(1.0, "float32"), 8), ir.Broadcast(ts.const(2.0, "float32"), 4)
    cases = [
        (Select(ts.const(True, "bool"), wide, narrow), "a select of float32x8 and float32x4 on bool"),
        (ir.VCast("float32x4", wide), "a conversion of float32x8 to float32x4"),
    ]
    for value, message in cases:
        body = map_stmt(func.body, on_stmt=lambda s: ir.VStore(s.buffer, s.indices[0], value) if s is store else None)
        with pytest.raises(InternalError, match=re.escape(message)):
            _check(func, body)
    register = ir.RegisterVar("acc", "float32x8")
    assign = ir.Registers([register], ir.Assign(register, narrow))
    with pytest.raises(InternalError, match="an assignment of float32x4 to acc of float32x8"):
        _check(func, ir.seq([func.body, assign]))


def test_loop_kinds_must_be_legal():
    """A parallel loop inside a vectorized one (the schedule check tells the user before the loop IR exists,
    so here it is a compiler bug), and a loop that does not step forward."""
    func = _vector_func()
    outer, inner = _loops(func.body)
    assert outer.body is inner
    swapped = replace(outer, kind=LoopKind.VECTORIZED, body=replace(inner, kind=LoopKind.PARALLEL))
    nested = map_stmt(func.body, on_stmt=lambda s: swapped if s is outer else None)
    with pytest.raises(InternalError, match="parallel loop j runs inside the vectorized loop i"):
        _check(func, nested)
    verify(nested, func.args, func.params, (), "a pass before the schedule's check", nesting=False)
    backwards = map_stmt(func.body, on_stmt=lambda s: replace(s, step=0) if s is inner else None)
    with pytest.raises(InternalError, match="loop j has step 0"):
        _check(func, backwards)
    unbound = map_stmt(func.body, on_stmt=lambda s: replace(s, kind=LoopKind.GPU_THREAD) if s is inner else None)
    with pytest.raises(InternalError, match="loop j of kind gpu_thread has GPU index none"):
        _check(func, unbound)
