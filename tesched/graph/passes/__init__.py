"""Graph passes, each a function ``Function -> Function``, and the default pipeline.

``DEFAULT_PASSES`` lists the pipeline ``build`` runs, in order: ``simplify_inference``,
``fold_scale_axis``, ``fold_constant``, ``combine_constant_adds``, ``combine_parallel_dense``,
``fuse_attention``, ``alter_op_layout``, ``sink_reshapes``, ``fuse_ops``.
:func:`default_sequence` makes it (with fusion rules, minus disabled passes) as a :class:`Sequential`.
"""
from __future__ import annotations

import functools
from typing import Iterable

from tesched.graph.fusion_rules import FusionRules
from tesched.graph.passes.alter_op_layout import alter_op_layout
from tesched.graph.passes.combine_constant_adds import combine_constant_adds
from tesched.graph.passes.combine_parallel_dense import combine_parallel_dense
from tesched.graph.passes.fold_constant import fold_constant
from tesched.graph.passes.fold_scale_axis import fold_scale_axis
from tesched.graph.passes.fuse_attention import fuse_attention
from tesched.graph.passes.fuse_ops import FusionReport, UnfusedEdge, explain_fusion, fuse_ops, fuse_ops_with_report
from tesched.graph.passes.sequential import Sequential, pass_name, print_trace
from tesched.graph.passes.simplify_inference import simplify_inference
from tesched.graph.passes.sink_reshapes import sink_reshapes

#: The passes ``tesched.graph.build`` runs, in order (``disabled_passes=`` leaves some out).
DEFAULT_PASSES = ("simplify_inference", "fold_scale_axis", "fold_constant", "combine_constant_adds",
                  "combine_parallel_dense", "fuse_attention", "alter_op_layout", "sink_reshapes", "fuse_ops")

_BY_NAME = {"simplify_inference": simplify_inference, "fold_scale_axis": fold_scale_axis,
            "fold_constant": fold_constant, "combine_constant_adds": combine_constant_adds,
            "combine_parallel_dense": combine_parallel_dense, "fuse_attention": fuse_attention,
            "sink_reshapes": sink_reshapes}
_WITH_RULES = {"alter_op_layout": alter_op_layout, "fuse_ops": fuse_ops}


def default_sequence(rules: FusionRules | None = None, disabled_passes: Iterable[str] = ()) -> Sequential:
    """The default pipeline with ``rules`` for ``fuse_ops``, without the passes named in
    ``disabled_passes`` (an unknown name raises ``ValueError``)."""
    disabled = set(disabled_passes)
    unknown = disabled - set(DEFAULT_PASSES)
    if unknown:
        raise ValueError(f"unknown passes {sorted(unknown)}; the passes are {', '.join(DEFAULT_PASSES)}")
    passes = [functools.partial(_WITH_RULES[name], rules=rules) if name in _WITH_RULES else _BY_NAME[name]
              for name in DEFAULT_PASSES if name not in disabled]
    return Sequential(passes)


__all__ = [
    "DEFAULT_PASSES", "FusionReport", "Sequential", "UnfusedEdge", "alter_op_layout", "combine_constant_adds",
    "combine_parallel_dense", "default_sequence",
    "explain_fusion", "fold_constant", "fold_scale_axis", "fuse_attention", "fuse_ops", "fuse_ops_with_report",
    "pass_name",
    "print_trace",
    "simplify_inference", "sink_reshapes",
]
