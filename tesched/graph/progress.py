"""The progress bar of a graph's build: one step per fused group whose kernel is ready, drawn by ``tqdm``
(``pip install tesched[progress]``) on standard error.

``progress=None`` (the default of :func:`tesched.graph.build`) draws it only when tqdm is installed and
standard error is a terminal, and only for a build that lasts (nothing appears in its first
:data:`DELAY_SECONDS`: a graph whose kernels are all cached shows none); ``True`` draws it whenever tqdm
is installed, ``False`` never. Without tqdm nothing is printed. This module only reports.
"""
from __future__ import annotations

import sys
from typing import Any

from tesched.graph.dataflow import is_view
from tesched.graph.ir import Call, Function
from tesched.graph.visit import post_order

DELAY_SECONDS = 1.0
"""A build shorter than this shows no bar."""


def kernel_groups(fn: Function) -> int:
    """The groups of fused function ``fn`` that get a kernel (every call of a primitive function that is
    not a view)."""
    return sum(1 for node in post_order(fn.body)
               if isinstance(node, Call) and isinstance(node.op, Function) and not is_view(node.op))


class BuildProgress:
    """``step()`` when a group's kernel is ready (from any thread), ``close()`` when the build ends."""

    def __init__(self, total: int, enabled: bool | None):
        self._bar: Any = None
        if enabled is False or (enabled is None and not _terminal()):
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return
        self._bar = tqdm(total=total, desc="building kernels", unit="kernel", delay=DELAY_SECONDS, leave=False)

    def step(self) -> None:
        if self._bar is not None:
            self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _terminal() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):    # a replaced or closed stream
        return False
