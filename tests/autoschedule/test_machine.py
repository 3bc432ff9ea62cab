"""The machine the cost model plans for: GPU targets are refused by name (the model knows CPUs only;
``auto_schedule`` takes its GPU path for them: tests/autoschedule/test_gpu.py)."""
import pytest

import tesched as ts
from tesched.autoschedule.machine import resolve


@pytest.mark.parametrize("target", ["opencl", "cuda"])
def test_gpu_targets_are_refused_with_what_to_use_instead(target):
    with pytest.raises(ts.ScheduleError, match=f"{target} is a GPU target.*ts.auto_schedule\\(outputs, target=...\\)"):
        resolve(target)
    with ts.Target(target), pytest.raises(ts.ScheduleError, match="GPU target"):
        resolve(None)
    assert resolve("c").target == "c"


@pytest.mark.parametrize("target", ["c", "x86-64", "x86-64-avx2", "x86-64-avx512"])
def test_rows_of_one_element_are_never_vectorized(target):
    """A target without SIMD has one lane per vector: half a vector must not round to zero elements."""
    machine = resolve(target)
    assert not machine.vectorizes(1, 4) and not machine.vectorizes(0, 8)
    assert machine.vectorizes(max(2, machine.lanes(4)), 4)
    A = ts.placeholder((3, 3), name="A")
    column = ts.compute((3, 1), lambda y, x: A[y, x] - A[y, x + 2], name="column")
    text = ts.explain_schedule(ts.auto_schedule(column, target=target))
    assert "column: rows of 1, too short to vectorize" in text and "vectorized" not in text
    assert ("no SIMD" in text) == (target == "c")
