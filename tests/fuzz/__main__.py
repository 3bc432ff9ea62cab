"""``python -m tests.fuzz [--long] [--jobs N] [--first N] [--target T] [--replay KIND:N]``: run the fuzzing
campaign.

Without options it runs the quick profile (what the test suite runs); ``--long`` runs the campaign whose
figures the project reports (>= 2,000 schedules, >= 10,000 argument mutations, every misuse row).
``--replay schedules:123`` runs one case in this process and prints its schedule and loop IR. ``--target``
builds every kernel for another target than this host (``TESCHED_TARGET``): ``x86-64-avx2`` or ``x86-64``
cover gcc's code paths without AVX-512 (on a CPU that has them; a replay takes the same option). The exit
status is 1 if any case failed for a reason no open issue item accounts for.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

from . import campaign


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--long", action="store_true", help="thousands of cases (about an hour on 2 cores)")
    parser.add_argument("--jobs", type=int, default=1, help="child processes running cases at once")
    parser.add_argument("--first", type=int, default=0, help="first case number (draws other cases)")
    parser.add_argument("--schedules", type=int, help="number of schedule cases (overrides the profile)")
    parser.add_argument("--mutations", type=int, help="number of argument mutations (overrides the profile)")
    parser.add_argument("--misuse", type=int, help="number of misuse rows (overrides the profile)")
    parser.add_argument("--target", help="build kernels for this target (TESCHED_TARGET), e.g. x86-64-avx2")
    parser.add_argument("--replay", metavar="KIND:N", help="run one case here, verbosely")
    args = parser.parse_args(argv)
    if args.target:
        import tesched as ts
        ts.Target(args.target)          # an unknown target fails here, naming the known ones
        os.environ["TESCHED_TARGET"] = args.target      # a replay's kernels (a campaign's: its profile's)
    if args.replay:
        from .worker import fuzzer
        kind, n = args.replay.split(":")
        print(json.dumps(fuzzer(kind).run_case(int(n), verbose=True), indent=2, default=str))
        return 0
    base = campaign.LONG if args.long else campaign.QUICK
    counts = {kind: getattr(args, kind) for kind in ("schedules", "mutations", "misuse")
              if getattr(args, kind) is not None}
    profile = dataclasses.replace(base, **counts, first=args.first, target=args.target or "")
    start = time.perf_counter()
    tallies = campaign.run(profile, jobs=args.jobs, progress=args.long)
    print(campaign.report(tallies))
    bad = campaign.unexpected(tallies)
    for failure in bad:
        print(f"FAIL {failure['kind']}:{failure.get('case')} {json.dumps(failure, default=str)[:600]}")
        if failure.get("case") is not None:
            target = f" --target {args.target}" if args.target else ""
            print(f"  replay: python -m tests.fuzz{target} --replay {failure['kind']}:{failure['case']}")
    print(f"{len(bad)} unexpected failures in {time.perf_counter() - start:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
