"""Recording ``store_at``/``store_root``/``bound``/``bound_extent``: what they keep and what they refuse."""
from __future__ import annotations

import pytest

import tesched as ts
from tesched.schedule.kinds import AttachType
from tesched.schedule.storage import AxisBound


def chain(n: int = 8):
    A = ts.placeholder((n, n), name="A")
    B = ts.compute((n, n), lambda i, j: A[i, j] + 1.0, name="B")
    C = ts.compute((n, n), lambda i, j: B[i, j] * 2.0, name="C")
    k = ts.reduce_axis((0, n), name="k")
    D = ts.compute((n,), lambda i: ts.sum(C[i, k], axis=k), name="D")
    return A, B, C, D, ts.create_schedule(D.op)


def test_store_at_and_store_root_record_the_storage_level():
    A, B, C, D, s = chain()
    s[B].store_at(s[C], C.op.axis[0])
    assert (s[B].store_type, s[B].store_stage, s[B].store_ivar) == (AttachType.SCOPE, s[C], C.op.axis[0])
    s[B].store_root()
    assert (s[B].store_type, s[B].store_stage, s[B].store_ivar) == (AttachType.ROOT, None, None)
    s[B].compute_root()                            # computing at the root stores there too
    assert s[B].store_type is None


@pytest.mark.parametrize("call, pattern", [
    (lambda s, A, B, C, D: s[B].store_at(s[C], D.op.axis[0]), r"store_at of B: 'i' is not a loop of C.*loop of D"),
    (lambda s, A, B, C, D: s[B].store_at(s[B], B.op.axis[0]), r"store_at of B at B\.i: .*inside itself"),
    (lambda s, A, B, C, D: s[D].store_at(s[C], C.op.axis[0]), r"store_at of D at C\.i: it is an output"),
    (lambda s, A, B, C, D: s[C].store_at(s[B], B.op.axis[0]), r"store_at of C at B\.i: B does not read C"),
    (lambda s, A, B, C, D: s[A].store_root(), r"store_root: A is an input"),
])
def test_store_misuse_is_refused_at_recording(call, pattern):
    A, B, C, D, s = chain()
    with pytest.raises(ts.ScheduleError, match=pattern):
        call(s, A, B, C, D)
    assert s[B].store_type is None and s[C].store_type is None


def test_bound_and_bound_extent_record_per_axis():
    A, B, C, D, s = chain()
    i, j = B.op.axis
    s[B].bound(i, 2, 4)
    s[B].bound_extent(j, 3)
    assert s[B].bounds == {i: AxisBound(2, 4), j: AxisBound(None, 3)}
    assert s[B].bounds[i].describe() == "[2, 6)" and s[B].bounds[j].describe() == "extent 3"


@pytest.mark.parametrize("call, pattern", [
    (lambda s, B, D: s[B].bound(B.op.axis[0], 5, 4), r"bound of B\.i: the region \[5, 9\) exceeds the "
                                                      r"tensor's dimension 0, \[0, 8\)"),
    (lambda s, B, D: s[B].bound(B.op.axis[0], -1, 2), r"bound of B\.i: the region \[-1, 1\) exceeds"),
    (lambda s, B, D: s[B].bound_extent(B.op.axis[1], 0), r"bound_extent of B\.j: extent must be positive"),
    (lambda s, B, D: s[B].bound(B.op.axis[0], 0.5, 2), r"bound of B\.i: min must be an int"),
    (lambda s, B, D: s[B].bound(D.op.axis[0], 0, 2), r"bound on stage B: 'i': it is not an axis of the stage"),
    (lambda s, B, D: s[D].bound(D.op.reduce_axis[0], 0, 2), r"bound on stage D: 'k': a reduction axis cannot"),
    (lambda s, B, D: s[B].bound(s[B].split(B.op.axis[0], 2)[0], 0, 2), r"'i\.outer': it is not an axis"),
    (lambda s, B, D: s[D].bound(D.op.axis[0], 0, 4), r"bound of D\.i: D is an output, whose whole dimension "
                                                      r"0, \[0, 8\), is requested; it exceeds the bound \[0, 4\)"),
])
def test_bound_misuse_is_refused_at_recording(call, pattern):
    A, B, C, D, s = chain()
    with pytest.raises(ts.ScheduleError, match=pattern):
        call(s, B, D)
    assert s[B].bounds == {} and s[D].bounds == {}


def test_bound_of_an_output_over_its_whole_dimension_is_accepted():
    A, B, C, D, s = chain()
    s[D].bound(D.op.axis[0], 0, 8)
    assert ts.lower(s, [A, D]) is not None
