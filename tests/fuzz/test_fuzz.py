"""The quick profile of the fuzzing campaign (``python -m tests.fuzz``), run by the test suite.

Random legal schedules must match NumPy, argument mutations must never crash or silently compute a wrong
answer, and every misuse row must raise a tesched error naming what is wrong; failures waiting for an
open issue item are listed in the fuzzers (``misuse.OPEN``, ``mutations.OPEN``) and must still fail.
"""
from __future__ import annotations

import json
import warnings

import pytest

from . import campaign, misuse


@pytest.fixture(scope="module")
def tallies():
    return campaign.run(campaign.QUICK)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["schedules", "mutations", "misuse"])
def test_quick_profile_has_no_unexpected_failure(tallies, kind):
    bad = [f for f in campaign.unexpected(tallies, count_slow=False) if f["kind"] == kind]
    slow = [f for f in campaign.unexpected(tallies) if f["kind"] == kind and f not in bad]
    if slow:
        warnings.warn("slow to lower on this machine: " + "; ".join(f"case {f['case']} ({f['pipeline']}, "
                                                                    f"{f['lower_s']:.1f} s)" for f in slow))
    assert tallies[kind].total == getattr(campaign.QUICK, kind)
    assert not bad, "\n".join(json.dumps(f, default=str)[:800] for f in bad)


def test_every_misuse_row_has_a_distinct_label():
    labels = [row.label for row in misuse.ROWS]
    assert len(labels) == len(set(labels)) >= 150
    assert set(misuse.OPEN) <= set(labels)
