"""Command line: ``python -m tesched demo [--quick]``.

Dispatches subcommands; each lives in its own module (``demo`` in :mod:`tesched.tools.demo`).
"""
from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tesched", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="lower, build, check and time fused vs unfused conv+relu "
                                            "and a scheduled matmul")
    demo.add_argument("--quick", action="store_true", help="small sizes, few runs (a smoke test)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from tesched.tools.demo import FULL, QUICK, run_demo
        run_demo(QUICK if args.quick else FULL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
