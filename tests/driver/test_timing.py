"""Tests of tesched.driver.timing: warm-up calls are not timed and every timed call runs."""
from tesched.driver.timing import time_calls


def test_time_calls_runs_warmup_then_repeat_times_number_calls():
    calls = []
    result = time_calls(lambda: calls.append(1), repeat=4, number=3, warmup=2)
    assert len(calls) == 2 + 4 * 3
    assert result.repeat == 4 and 0 <= result.min <= result.median
    assert str(result).startswith("median ")
