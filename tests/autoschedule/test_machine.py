"""The machine the cost model plans for: GPU targets are refused by name (the model knows CPUs only)."""
import pytest

import tesched as ts
from tesched.autoschedule.machine import resolve


@pytest.mark.parametrize("target", ["opencl", "cuda"])
def test_gpu_targets_are_refused_with_what_to_use_instead(target):
    A = ts.placeholder((16, 16), name="A")
    B = ts.compute((16, 16), lambda i, j: A[i, j] * 2.0, name="B")
    with pytest.raises(ts.ScheduleError, match=f"auto_schedule: {target} is a GPU target.*gpu_default_schedule"):
        ts.auto_schedule(B, target=target)
    with ts.Target(target), pytest.raises(ts.ScheduleError, match="GPU target"):
        resolve(None)
    assert resolve("c").target == "c"
