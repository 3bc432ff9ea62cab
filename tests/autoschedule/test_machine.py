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
