"""Profiling instrumentation (tesched/transform/profile.py): a timer around the function and each produce block."""
import tesched as ts
from tesched.ir import nodes as ir
from tesched.ir.visitor import walk_stmts
from tesched.transform.profile import instrument
from tests.viz.helpers import stencil


def test_instrument_numbers_timers_outermost_first():
    s, args, _ = stencil()
    body, regions = instrument(ts.lower(s, args).body, "blur")
    assert [(r.slot, r.label, r.parallel) for r in regions] == [
        (0, "blur", False), (1, "produce C", False), (2, "produce B", True)]
    timers = [t for t in walk_stmts(body) if isinstance(t, ir.Timer)]
    assert [t.slot for t in timers] == [0, 1, 2] and "timed produce B" in str(body)
