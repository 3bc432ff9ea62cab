"""Command line: ``python -m tesched demo [--quick]``, ``python -m tesched show script.py [-o page.html]``,
``python -m tesched cache info|clear|verify``.

Dispatches subcommands; each lives in its own module (``demo`` in :mod:`tesched.tools.demo`, ``show`` in
:mod:`tesched.tools.show`, ``cache`` in :mod:`tesched.tools.cache`).
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
    show = commands.add_parser("show", help="run a script and write an HTML page of the last kernel it "
                                             "lowered or built (loop IR, C, tiles and halos)")
    show.add_argument("script", help="the Python script to run")
    show.add_argument("-o", "--output", help="the HTML file (default: SCRIPT.html in the current directory)")
    show.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    cache = commands.add_parser("cache", help="the compiled-kernel cache: info (size, entries, age), "
                                              "verify (checksums; bad entries removed), clear")
    cache.add_argument("action", choices=["info", "verify", "clear"])
    args = parser.parse_args(argv)
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
