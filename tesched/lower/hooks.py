"""Where higher layers meet lowered code: the viewer's page writers behind every ``to_html``, and watchers
of the functions ``lower()`` returns.

``to_html`` is offered by lowered functions, kernels and graph executables, which live below the viewer
(:mod:`tesched.viz`). :func:`write_page` names the viewer's writer of each kind of page (``"kernel"``,
``"graph"``) and loads the viewer when the first page is written, as the facade loads its lazy names: the
viewer is an application of the compiler, never imported by it, and nothing registers itself.
:func:`watch_lowering` lets a tool see every function lowered while it runs (``python -m tesched show
script.py`` shows a script's last kernel). This module holds the two and nothing else.
"""
from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

VIEWER = "tesched.viz"
PAGE_WRITERS = {"kernel": "write_kernel_page", "graph": "write_graph_page"}
"""The function of :data:`VIEWER` that writes each kind of page."""

_watchers: list[Callable[[Any], None]] = []


def write_page(kind: str, obj: object, path: str | Path, **options: Any) -> Path:
    """Write the HTML page of ``obj`` to ``path``.

    Parameters
    ----------
    kind : str
        ``"kernel"`` (a lowered function or a kernel) or ``"graph"`` (a graph executable).
    obj : LoweredFunc, Kernel or Executable
        What to show.
    path : str or Path
        The HTML file to write.
    **options
        Passed to the page writer (see :mod:`tesched.viz`).

    Returns
    -------
    Path
        The file written.
    """
    if kind not in PAGE_WRITERS:
        raise ValueError(f"to_html: no writer of {kind!r} pages; the kinds are {sorted(PAGE_WRITERS)}")
    writer: Callable[..., Path] = getattr(importlib.import_module(VIEWER), PAGE_WRITERS[kind])
    return writer(obj, path, **options)


@contextlib.contextmanager
def watch_lowering(callback: Callable[[Any], None]) -> Iterator[None]:
    """Call ``callback(func)`` with every :class:`~tesched.lower.func.LoweredFunc` that ``lower()``
    returns inside the ``with`` block."""
    _watchers.append(callback)
    try:
        yield
    finally:
        _watchers.remove(callback)


def notify_lowered(func: Any) -> None:
    """Tell the watchers that ``func`` was lowered (called by ``lower()``)."""
    for callback in _watchers:
        callback(func)
