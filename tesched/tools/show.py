"""``python -m tesched show script.py``: run a script and write the page of the last kernel it lowered.

The script runs as ``__main__`` (with its own directory first on ``sys.path`` and the remaining
arguments as ``sys.argv``), while every function ``lower()`` returns is watched (``build`` lowers through
it too). The last one is built (from the kernel cache when the script built it) and its page written
(see :mod:`tesched.viz`). Nothing else about the script is kept.
"""
from __future__ import annotations

import runpy
import sys
from collections.abc import Sequence
from pathlib import Path

from tesched.driver.build import build
from tesched.lower.func import LoweredFunc
from tesched.lower.hooks import watch_lowering


def last_lowered(script: str | Path, argv: Sequence[str] = ()) -> LoweredFunc:
    """Run ``script`` and return the last function it lowered.

    Parameters
    ----------
    script : str or Path
        The Python script to run.
    argv : sequence of str
        Its arguments.

    Returns
    -------
    LoweredFunc
    """
    path = Path(script)
    if not path.is_file():
        raise FileNotFoundError(f"show: no script {script}")
    seen: list[LoweredFunc] = []
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(path), *argv]
    sys.path.insert(0, str(path.resolve().parent))
    try:
        with watch_lowering(seen.append):
            runpy.run_path(str(path), run_name="__main__")
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    if not seen:
        raise ValueError(f"show: {script} lowered and built no kernel")
    return seen[-1]


def show(script: str | Path, output: str | Path | None = None, argv: Sequence[str] = ()) -> Path:
    """Run ``script``, build the last kernel it lowered, and write that kernel's page.

    Parameters
    ----------
    script : str or Path
        The Python script to run.
    output : str or Path, optional
        The HTML file (default: the script's name with ``.html``, in the current directory).
    argv : sequence of str
        The script's arguments.

    Returns
    -------
    Path
        The page written.
    """
    func = last_lowered(script, argv)
    out = Path(output) if output is not None else Path(Path(script).stem + ".html")
    return build(func, name=func.name).to_html(out)
