"""The quick profile of the fuzzing campaign (``python -m tests.fuzz``), run by the test suite, and a smaller
one building for ``x86-64-avx2`` (gcc's code paths without AVX-512) where this CPU runs it.

Random legal schedules must match NumPy, argument mutations must never crash or silently compute a wrong
answer, and every misuse row must raise a tesched error naming what is wrong; failures waiting for an
open issue item are listed in the fuzzers (``misuse.OPEN``, ``mutations.OPEN``) and must still fail.
"""
from __future__ import annotations

import json
import warnings

import pytest

from targets import runs_here

from . import campaign, misuse


PROFILES = {"host": campaign.QUICK, "avx2": campaign.QUICK_AVX2}


@pytest.fixture(scope="module", params=list(PROFILES))
def profile(request):
    if PROFILES[request.param].target and not runs_here(PROFILES[request.param].target):
        pytest.skip(f"this CPU cannot run code built for {PROFILES[request.param].target}")
    return PROFILES[request.param], campaign.run(PROFILES[request.param])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["schedules", "mutations", "misuse"])
def test_quick_profile_has_no_unexpected_failure(profile, kind):
    want, tallies = profile
    bad = [f for f in campaign.unexpected(tallies, count_slow=False) if f["kind"] == kind]
    slow = [f for f in campaign.unexpected(tallies) if f["kind"] == kind and f not in bad]
    if slow:
        warnings.warn("slow to lower on this machine: " + "; ".join(f"case {f['case']} ({f['pipeline']}, "
                                                                    f"{f['lower_cpu_s']:.1f} CPU s)" for f in slow))
    assert tallies[kind].total == getattr(want, kind)
    assert not bad, "\n".join(json.dumps(f, default=str)[:800] for f in bad)


def test_every_misuse_row_has_a_distinct_label():
    labels = [row.label for row in misuse.ROWS]
    assert len(labels) == len(set(labels)) >= 150
    assert set(misuse.OPEN) <= set(labels)
