"""Tests of tesched.driver.timing: warm-up calls are not timed and every timed call runs; interleaved timing
warms its variants up, needs a round, and names the timings that vary too much."""
import time

import pytest

from tesched.driver.timing import Timing, busy, busy_warning, round_robin, spread, time_calls, time_interleaved, warm_up


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


def test_interleaved_timing_needs_a_round():
    with pytest.raises(ValueError, match="rounds"):
        time_interleaved({"noop": lambda: None}, rounds=0)


def test_warm_up_calls_until_the_first_call_costs_are_paid():
    costs = [0.05, 0.02, 0.0, 0.0, 0.0, 0.0]       # a slow first call, then a slower-than-steady second

    def call():
        time.sleep(costs.pop(0) if costs else 0.0)
    calls = warm_up(call)
    assert calls >= 4       # not settled while the slow calls are among the last two


def test_busy_timings_are_named_in_a_warning():
    quiet = Timing(median=1.0, min=0.95, rounds=10, calls=1, spread=0.05)
    noisy = Timing(median=1.0, min=0.4, rounds=10, calls=1, spread=0.6)
    assert busy({"a": quiet, "b": noisy}) == ["b"]
    assert busy_warning({"gemm": {"a": quiet}}) == []
    warning = "\n".join(busy_warning({"gemm": {"a": quiet, "b": noisy}}, load=(3.1, 4.0)))
    assert "busy" in warning and "gemm, b" in warning and "3.1" in warning


def test_round_robin_warms_up_then_times_a_block_of_each_variant_per_round_in_turn():
    order = []
    variants = {"a": lambda: order.append("a"), "b": lambda: order.append("b"), "c": lambda: order.append("c")}
    samples = round_robin(variants, rounds=2, number={"a": 2, "b": 1, "c": 1}, warmup=1)
    assert order == ["a", "b", "c"] + ["a", "a", "b", "c"] * 2
    assert all(len(s.wall) == len(s.cpu) == 2 and min(s.wall) >= 0 for s in samples.values())


def test_round_robin_turns_the_order_and_wakes_each_block():
    order = []
    variants = {"a": lambda: order.append("a"), "b": lambda: order.append("b")}
    round_robin(variants, rounds=2, rotate=True, wake=True)
    assert order == ["a", "a", "b", "b", "b", "b", "a", "a"]


def test_spread_is_the_interquartile_range():
    assert spread([1.0]) == 0.0
    assert spread([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(3.0)   # 4.5 - 1.5
