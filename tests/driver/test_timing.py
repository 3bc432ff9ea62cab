"""Tests of tesched.driver.timing: warm-up calls are not timed and every timed call runs."""
from tesched.driver.timing import time_calls


def test_time_calls_runs_warmup_then_repeat_times_number_calls():
    calls = []
    result = time_calls(lambda: calls.append(1), repeat=4, number=3, warmup=2)
    assert len(calls) == 2 + 4 * 3
    assert result.repeat == 4 and 0 <= result.min <= result.median
    assert str(result).startswith("median ")


def test_sample_times_repeat_runs_then_more_while_the_budget_lasts_up_to_the_limit():
    from tesched.driver.timing import sample
    calls = []
    assert len(sample(lambda: calls.append(1), repeat=3, number=2)) == 3 and len(calls) == 6
    times = sample(lambda: calls.append(1), repeat=2, budget=10.0, limit=25)
    assert len(times) == 25 and all(t >= 0 for t in times)      # the limit stops a budget's extra runs
    assert len(sample(lambda: None, repeat=4, budget=10.0, limit=4)) == 4
