"""Where higher layers plug into lowered code: the page writer behind every ``to_html``, and watchers of
the functions ``lower()`` returns.

``to_html`` is offered by lowered functions, kernels and graph executables, which live below the viewer
(:mod:`tesched.viz`); the viewer registers a writer per kind of page (``"kernel"``, ``"graph"``) here
when ``tesched`` is imported, and they call :func:`write_page`. :func:`watch_lowering` lets a tool see every function lowered while it runs (``python
-m tesched show script.py`` shows a script's last kernel). This module holds the two registrations and nothing else.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

PageWriter = Callable[..., Path]

_page_writers: dict[str, PageWriter] = {}
_watchers: list[Callable[[Any], None]] = []


def set_page_writer(kind: str, writer: PageWriter) -> None:
    """Install ``writer(obj, path, **options) -> Path``, which ``to_html`` calls for pages of ``kind``."""
    _page_writers[kind] = writer


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
    writer = _page_writers.get(kind)
    if writer is None:
        raise RuntimeError(f"to_html: no writer of {kind} pages; `import tesched` registers tesched.viz's")
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
