"""What every tutorial script shares: its command line and how it states a speed ratio.

:func:`tutorial_parser` gives a tutorial an :mod:`argparse` command line (``--help``, ``--quick``; any
other argument is an error, so a typo never silently runs the full tutorial); :func:`parse_tutorial_args`
also turns on quick mode when ``TESCHED_QUICK`` is set (see :mod:`tesched.config`). :func:`ratio_text`
prints a ratio of two timings, or a hint when the runs vary too much for the ratio to mean anything (on a
busy machine a kernel can seem 0.0x as fast as another).
"""
from __future__ import annotations

import argparse
from typing import Sequence

from tesched.config import settings

NOISY_SPREAD = 0.5      # a timing whose spread exceeds half its median does not support a ratio


def tutorial_parser(doc: str, quick_help: str) -> argparse.ArgumentParser:
    """A parser whose description is the tutorial's docstring and whose ``--quick`` says ``quick_help``
    (the small sizes, e.g. ``"64 x 64, a smoke test"``)."""
    title, _, rest = doc.strip().partition("\n")
    if rest.startswith("="):                      # the reST underline of the title (the documentation's heading)
        rest = rest.partition("\n")[2]
    parser = argparse.ArgumentParser(description=title, epilog=rest.strip().split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help=f"small sizes and few runs ({quick_help}); also TESCHED_QUICK=1")
    return parser


def parse_tutorial_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse ``argv`` (default: the command line); ``quick`` is also set by ``TESCHED_QUICK=1``."""
    args = parser.parse_args(argv)
    args.quick = bool(args.quick or settings().quick)
    return args


def is_noisy(median: float, spread: float) -> bool:
    """True when ``spread`` (interquartile range, or median minus fastest) exceeds half the ``median``."""
    return median <= 0 or spread > NOISY_SPREAD * median


def ratio_text(slower: float, faster: float, slower_spread: float = 0.0, faster_spread: float = 0.0) -> str:
    """``slower / faster`` as ``"2.31x"``, or a hint when either timing is too noisy to divide."""
    if is_noisy(slower, slower_spread) or is_noisy(faster, faster_spread):
        return ("not measurable now (the timed runs vary by more than half their median: the machine is "
                "busy; run again when it is quiet)")
    return f"{slower / faster:.2f}x"
