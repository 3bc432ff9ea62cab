"""Converters of the ATen lookups by integer indices: ``gather`` (``torch.gather``). ``embedding`` is in
:mod:`.convert_nn`, ``index_select`` in :mod:`.convert_rearrange`. Indices outside the axis are clipped
to it, where PyTorch raises; each converter takes an :class:`~.call.AtenCall` and returns a graph expression.
"""
from __future__ import annotations

from collections.abc import Callable

from tesched import graph as G
from tesched.frontend.call import AtenCall
from tesched.graph.ir import Expr


def gather(call: AtenCall) -> Expr:
    """``self`` read along ``dim`` at ``index`` (of the same rank)."""
    return G.gather(call.tensor("self"), call.tensor("index"), int(call["dim"]))


CONVERTERS: dict[str, Callable[[AtenCall], Expr]] = {
    "aten.gather.default": gather,
}
"""The op table's rows for this module's converters (merged into :data:`.op_table.CONVERTERS`)."""
