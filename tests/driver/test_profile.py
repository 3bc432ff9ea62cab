"""``build(..., profile=True)`` (tesched/driver/profile.py, tesched/transform/profile.py): timers per produce
block, counters read per call, and the overhead measured against the same kernel without timers."""
import numpy as np
import pytest

import tesched as ts
from tests.viz.helpers import ROWS, N, stencil


@pytest.fixture(scope="module")
def profiled():
    s, args, reference = stencil()
    return ts.build(s, args, name="blur", profile=True), reference


def test_profiled_kernel_computes_the_same(profiled, rand):
    f, reference = profiled
    a = rand((N, N))
    np.testing.assert_allclose(f(a), reference(a), rtol=1e-6)
    assert "ts_prof_now()" in f.c_source
    plain = f.uninstrumented()
    assert "ts_prof" not in plain.c_source
    np.testing.assert_allclose(plain(a), reference(a), rtol=1e-6)


def test_counters_count_calls_and_runs_of_each_produce_block(profiled, rand):
    f, reference = profiled
    a = rand((N, N))
    f.profile_counters(reset=True)
    for _ in range(3):
        np.testing.assert_allclose(f(a), reference(a), rtol=1e-6)
    counted = f.profile_counters(reset=True)
    assert counted.calls == 3 and counted.total > 0
    runs = {r.stage: r.runs for r in counted.regions}
    assert runs == {"C": 1, "B": -(-(N - 1) // ROWS)}     # B once per band of C's rows
    assert next(r for r in counted.regions if r.stage == "B").parallel
    assert f.profile_counters().calls == 0


def test_profile_measures_overhead_in_turns(profiled, rand):
    f, _ = profiled
    p = f.profile(rand((N, N)), repeat=4)
    assert p.calls == 4 and p.instrumented > 0 and p.plain > 0
    assert p.overhead == pytest.approx(p.instrumented / p.plain - 1)
    assert f.last_profile is p
    assert "timers cost" in str(p) and "produce B" in str(p)


def test_profile_of_an_uninstrumented_kernel_says_how_to_get_one(rand):
    s, args, _ = stencil()
    f = ts.build(s, args, name="blur")
    with pytest.raises(ValueError, match="blur was built without timers; build it with profile=True"):
        f.profile(rand((N, N)))
