"""default_schedule: inlining, where anchors are computed, parallel thresholds, registered schedules."""
import numpy as np

import tesched as ts
import tesched.nn as nn
from tesched.nn import schedule as nn_schedule

from .helpers import ATOL, RTOL, run


def attach_of(s, tensor):
    st = s[tensor]
    return st.attach_type, (st.attach_stage.name if st.attach_stage is not None else None)


def test_epilogue_is_inlined_and_anchor_computed_in_the_output():
    x, w, b = ts.placeholder((4, 8), name="x"), ts.placeholder((16, 8), name="w"), ts.placeholder((16,), name="b")
    product = nn.dense(x, w)
    biased = nn.bias_add(product, b)
    out = nn.sigmoid(biased)
    s = nn.default_schedule(out)
    assert attach_of(s, biased) == ("inline", None)
    assert attach_of(s, product) == ("scope", "sigmoid")


def test_an_anchor_stored_whole_computes_through_a_write_cache():
    x, w = ts.placeholder((4, 8), name="x"), ts.placeholder((16, 8), name="w")
    product = nn.dense(x, w)
    s = nn.default_schedule(product)
    cache = next(st for st in s.stages if st.name == "dense.local")
    assert cache.attach_type == "scope" and cache.attach_stage is s[product]


def test_an_anchor_read_by_two_stored_stages_stays_at_the_root(rand):
    x, w = ts.placeholder((2, 8), name="x"), ts.placeholder((16, 8), name="w")
    product = nn.dense(x, w)
    outs = [nn.relu(product), nn.tanh(product)]
    s = nn.default_schedule(outs)
    assert s[product].attach_type == "root"
    xa, wa = rand(x.shape, low=-1), rand(w.shape, low=-1)
    (r, t), _ = run(outs, [x, w], [xa, wa])
    np.testing.assert_allclose(r, np.maximum(xa @ wa.T, 0), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(t, np.tanh(xa @ wa.T), rtol=RTOL, atol=ATOL)


def test_small_nests_run_serial_and_large_ones_parallel():
    rows = nn_schedule.PARALLEL_MIN_WORK // 1024
    small, large = ts.placeholder((4, 4), name="small"), ts.placeholder((rows, 1024), name="large")
    for t, expect in ((small, False), (large, True)):
        y = nn.relu(t)
        text = str(ts.lower(nn.default_schedule(y), [t, y]))
        assert ("parallel for" in text) is expect


def test_registered_schedules_are_used_for_their_op(monkeypatch):
    calls = []
    monkeypatch.setitem(nn_schedule._ANCHOR_SCHEDULES, "sum", lambda s, red, host: calls.append((red, host)))
    x = ts.placeholder((3, 4), name="x")
    total = nn.sum(x, axis=1)
    nn.default_schedule(total)
    (red, host), = calls
    assert host is total and red.op.name == "sum.local"


def test_largest_divisor():
    assert nn_schedule.largest_divisor(12, 5) == 4
    assert nn_schedule.largest_divisor(7, 4) == 1
    assert nn_schedule.largest_divisor(3, 16) == 3
