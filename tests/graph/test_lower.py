"""compile_primitive through G.build: each fused group scheduled by the operator library's default
schedules, by auto_schedule, or from a tuning database, always checked against the reference."""
import numpy as np
import pytest

import tesched as ts
from tesched import graph as G
from tesched.graph.lower import declare_primitive

from .helpers import ATOL, RTOL, vgg_block, vgg_reference


@pytest.mark.slow
def test_auto_and_tuned_schedules_per_group(rand, tmp_path):
    f, params = vgg_block()
    x = rand((1, 4, 6, 6), low=-1)
    ref = vgg_reference(x, params)
    auto = G.build(f, params=params, schedule="auto")
    np.testing.assert_allclose(auto(x), ref, rtol=RTOL, atol=ATOL)
    group = auto.kernels[0]
    placeholders, (out,) = declare_primitive(group.function)
    db = tmp_path / "tuning.json"
    ts.tune(out, placeholders + [out], trials=2, db=db, progress=False)
    tuned = G.build(f, params=params, schedule="tuned", tuning_db=db)
    np.testing.assert_allclose(tuned(x), ref, rtol=RTOL, atol=ATOL)


def test_schedule_choice_is_checked():
    f, params = vgg_block()
    with pytest.raises(ValueError, match="schedule must be one of 'default', 'auto', 'tuned', got 'fast'"):
        G.build(f, params=params, schedule="fast")
    with pytest.raises(ValueError, match="schedule='tuned' needs tuning_db="):
        G.build(f, params=params, schedule="tuned")
