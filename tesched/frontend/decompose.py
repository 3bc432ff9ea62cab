"""Core ATen for the frontend: ``run_decompositions`` with PyTorch's default table, except for the ops the op
table converts better whole than decomposed (resampling of every rank, which PyTorch otherwise rewrites into
index arithmetic of ``arange``, casts and ``aten.index``; ``roll``; ``pad``, whose reflecting, replicating
and circular modes become ``aten.index`` too), and for their siblings that are
not converted (bicubic, antialiased), so that an error names the op the model called.
"""
from __future__ import annotations

from typing import Any

from tesched.frontend.lazy_torch import require_torch

KEPT_WHOLE = frozenset(
    [f"aten.upsample_{name}.vec" for name in ("nearest1d", "nearest3d", "linear1d", "trilinear3d", "bicubic2d")]
    + [f"aten._upsample_nearest_exact{n}d.vec" for n in (1, 2, 3)]
    + [f"aten._upsample_{name}_aa.vec" for name in ("bilinear2d", "bicubic2d")]
    + ["aten.roll.default", "aten.pad.default"])
"""The ops :func:`core_aten` leaves as they are."""


def core_aten(program: Any) -> Any:
    """``program.run_decompositions()`` keeping the ops of :data:`KEPT_WHOLE`."""
    torch = require_torch()
    table = torch.export.default_decompositions()
    for op in list(table):
        if str(op) in KEPT_WHOLE:
            del table[op]
    return program.run_decompositions(table)
