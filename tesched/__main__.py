"""Command line of tesched: ``python -m tesched demo [--quick]``, ``python -m tesched show script.py
[-o page.html]``, ``python -m tesched cache info|clear|verify``, ``python -m tesched --version``.

Dispatches subcommands; each lives in its own module (``demo`` in :mod:`tesched.tools.demo`, ``show`` in
:mod:`tesched.tools.show`, ``cache`` in :mod:`tesched.tools.cache`). The benchmark suite has its own
command, ``python -m tesched.bench``.
"""
from __future__ import annotations

import argparse
import sys

from tesched.version import __version__

DESCRIPTION = "tesched: a tensor-expression scheduling DSL compiled to C. Subcommands:"
EPILOG = """examples:
  python -m tesched demo --quick            build, check and time small kernels (a smoke test)
  python -m tesched show tutorials/01_schedule_basics.py -o page.html
  python -m tesched cache info              where the kernel cache is and how big
  python -m tesched.bench --quick           the benchmark suite against NumPy and PyTorch
"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m tesched`` (its ``--help`` is plain text)."""
    parser = argparse.ArgumentParser(prog="python -m tesched", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"tesched {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser("demo", help="lower, build, check and time fused vs unfused conv+relu "
                                            "and a scheduled matmul")
    demo.add_argument("--quick", action="store_true", help="small sizes, few runs (a smoke test)")
    show = commands.add_parser("show", help="run a script and write an HTML page of the last kernel it "
                                             "lowered or built (loop IR, C, tiles and halos)")
    show.add_argument("script", help="the Python script to run")
    show.add_argument("-o", "--output", help="the HTML file (default: SCRIPT.html in the current directory)")
    show.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    cache = commands.add_parser("cache", help="the compiled-kernel cache: info (size, entries, age), "
                                              "verify (checksums; bad entries removed), clear")
    cache.add_argument("action", choices=["info", "verify", "clear"])
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        from tesched.tools.demo import FULL, QUICK, run_demo
        run_demo(QUICK if args.quick else FULL)
    elif args.command == "show":
        from tesched.tools.show import show as show_script
        try:
            page = show_script(args.script, args.output, args.script_args)
        except (FileNotFoundError, ValueError) as err:
            print(err, file=sys.stderr)
            return 2
        print(f"wrote {page}")
    elif args.command == "cache":
        from tesched.tools.cache import COMMANDS
        return COMMANDS[args.action]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
