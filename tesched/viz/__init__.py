"""tesched.viz: see the schedule. Self-contained HTML pages and tile drawings.

``ts.lower(s, args).to_html(path)``, ``ts.build(...).to_html(path)`` and ``exe.to_html(path)`` (a graph
executable) write one HTML file that needs no network: the loop IR beside the C it became (click a loop),
loops coloured by kind with the schedule primitive that made each, every stage's redundancy factor, time
per produce block for kernels built with ``profile=True``, and for every ``compute_at`` stage a to-scale
drawing of one tile, the producer region it needs and the recomputed halo, from the lowered model's isl
sets. Graph pages show the graph after each pass, the fused groups, why each unfused edge was not fused,
and every group's kernel. ``save_tile_png`` draws the tile figure with matplotlib (an optional extra).

``to_html`` loads this package on the first page it writes (:mod:`tesched.lower.hooks` names its writers);
it does not load the graph package (a graph page is only written for an executable, which has loaded it).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tesched.driver.kernel import Kernel
from tesched.lower.func import LoweredFunc
from tesched.viz.graph_page import graph_page
from tesched.viz.html import page, text, write
from tesched.viz.kernel_page import kernel_section

if TYPE_CHECKING:
    from tesched.graph.executor import Executable


def write_kernel_page(obj: LoweredFunc | Kernel, path: str | Path, title: str | None = None) -> Path:
    """Write the HTML page of a lowered function or a kernel (what their ``to_html`` does).

    Parameters
    ----------
    obj : LoweredFunc or Kernel
        What to show: a lowered function (its C is generated for the current target, not compiled) or a
        kernel (its own C, and its stage times when built with ``profile=True``).
    path : str or Path
        The file to write (overwritten).
    title : str, optional
        The page's title (default: the function's name).

    Returns
    -------
    Path
        ``path``.

    Example
    -------
    >>> ts.build(s, [A, B, C], profile=True).to_html("matmul.html")  # doctest: +SKIP
    """
    func, kernel = _lowered(obj, "to_html"), obj if isinstance(obj, Kernel) else None
    name = title if title is not None else func.name
    header = f"<header><h1>tesched: {text(name)}</h1><div class=\"meta\">loop IR, C, tiles and halos</div></header>"
    return write(path, page(name, header + kernel_section(func, kernel)))


def write_graph_page(exe: Executable, path: str | Path, title: str | None = None) -> Path:
    """Write the HTML page of a graph executable (what ``exe.to_html`` does).

    Parameters
    ----------
    exe : Executable
        A graph executable (``tesched.graph.build``).
    path : str or Path
        The file to write (overwritten).
    title : str, optional
        The page's title (default: ``graph``).

    Returns
    -------
    Path
        ``path``.
    """
    return write(path, graph_page(exe, title))


def save_tile_png(func: LoweredFunc | Kernel, path: str | Path, stage: str | None = None, dpi: int = 120) -> Path:
    """Draw the tile/halo figure of a ``compute_at`` stage to a PNG file with matplotlib.

    Parameters
    ----------
    func : LoweredFunc or Kernel
        The lowered function (or a kernel, for its lowered function).
    path : str or Path
        The PNG file to write.
    stage : str, optional
        The stage computed at another's loop (default: the first such stage).
    dpi : int
        Resolution.

    Returns
    -------
    Path
        ``path``.
    """
    from tesched.viz.png import save_png  # matplotlib is an optional extra
    return save_png(_lowered(func, "save_png"), path, stage, dpi)


def _lowered(obj: object, caller: str) -> LoweredFunc:
    """The loop IR of a kernel or lowered function, or a ``TypeError`` naming ``caller``."""
    func = obj.lowered if isinstance(obj, Kernel) else obj
    if not isinstance(func, LoweredFunc):
        what = "a kernel loaded from an exported library (it has no loop IR)" if isinstance(obj, Kernel) \
            else type(obj).__name__
        raise TypeError(f"{caller}: expected a lowered function or a kernel, got {what}")
    return func


__all__ = ["save_tile_png", "write_graph_page", "write_kernel_page"]
