"""The child process of :mod:`.runner`: runs cases ``FIRST..LAST-1`` of one fuzzer, one JSON line each.

Usage: ``python -m tests.fuzz.worker KIND FIRST LAST``. Before a case it prints ``{"start": n}``, so the
parent knows which case was running if this process dies.
"""
from __future__ import annotations

import json
import sys


def fuzzer(kind: str):
    import importlib
    return importlib.import_module(f".{kind}", __package__)


def main(argv: list[str]) -> int:
    kind, first, last = argv[0], int(argv[1]), int(argv[2])
    run_case = fuzzer(kind).run_case
    for n in range(first, last):
        print(json.dumps({"start": n}), flush=True)
        record = run_case(n)
        record["case"] = n
        print(json.dumps(record, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
