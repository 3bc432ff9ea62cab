"""Tests of the schedule's vocabularies: GPU indices (``thread_axis``)."""
import pytest

import tesched as ts
from tesched.schedule.kinds import LoopKind, THREAD_TAGS


@pytest.mark.parametrize("tag", THREAD_TAGS)
def test_thread_axis_kind_and_dimension(tag):
    axis = ts.thread_axis(tag)
    assert axis.tag == tag
    assert axis.kind is (LoopKind.GPU_BLOCK if tag.startswith("blockIdx") else LoopKind.GPU_THREAD)
    assert axis.dim == "xyz".index(tag[-1])
    assert axis.kind.bound and not LoopKind.PARALLEL.bound


def test_thread_axis_rejects_unknown_tags():
    with pytest.raises(ValueError, match="threadIdx.w.*blockIdx.x"):
        ts.thread_axis("threadIdx.w")
    with pytest.raises(TypeError, match="thread_axis"):
        ts.thread_axis(0)
