"""Fusion rules: which op patterns may follow which inside one fused group, the largest group, and ops
never to fuse. A :class:`FusionRules` object is plain data a user changes per target and passes to
``fuse_ops`` or ``build``; the defaults are TVM's:

- an ``out_elemwise_fusable`` op (conv2d, dense, pools) absorbs the ``elemwise``/``broadcast`` ops after it;
- ``elemwise``, ``broadcast`` and ``injective`` ops chain with each other, and may feed a reduction;
- a ``comm_reduce`` op ends its group; an ``opaque`` op stands alone.

A group's pattern is the largest pattern of its ops. Two groups joined by an edge merge when the
consumer group's pattern is in ``may_follow[producer group's pattern]``, so a group never holds two
anchors one after the other (conv2d then conv2d) unless a user allows it, or ``conv_chains`` lets a
convolution follow a group of one convolution (conv2d, relu, conv2d: two at most), which a GPU
``auto_schedule`` computes in one kernel, the first per block of the second with its halo
(:mod:`tesched.autoschedule.gpu_chain`); ``G.build(.., target="opencl" | "cuda", schedule="auto")`` sets
it when given no rules. Two matrix products side by
side, whose results meet in an elementwise op (the two matmuls of an RNN cell), share a group when
``combine_anchors`` is set, and the pieces of a split anchor result (the gates of a
recurrent cell, sliced from one matmul) join its group when ``slice_anchors`` is set.

A value read by several groups (``shared_values``) is, under ``"auto"``, computed once and kept as one
more output of the group that fuses it (so a diamond of elementwise ops, or an LSTM cell whose cell state
is both a result and read by the hidden state, is one kernel), and recomputed inside a reader when
keeping it is impossible (it would make a cycle) and it is cheap (at most ``recompute_max_ops``
elementwise, broadcast or injective ops); ``"keep"`` never recomputes, ``"recompute"`` recomputes every
cheap shared value in each reader, and ``"separate"`` ends the value's group there (TVM's behaviour).
This module decides nothing about graphs; see :mod:`.passes.fuse_ops`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from tesched.graph.op import get_op
from tesched.nn.pattern import Pattern

_CHAINABLE = (Pattern.ELEMWISE, Pattern.BROADCAST, Pattern.INJECTIVE, Pattern.COMM_REDUCE)


def default_may_follow() -> dict[Pattern, set[Pattern]]:
    """TVM's table: what may follow each pattern in a fused group."""
    return {
        Pattern.ELEMWISE: set(_CHAINABLE),
        Pattern.BROADCAST: set(_CHAINABLE),
        Pattern.INJECTIVE: set(_CHAINABLE),
        Pattern.COMM_REDUCE: set(),
        Pattern.OUT_ELEMWISE_FUSABLE: {Pattern.ELEMWISE, Pattern.BROADCAST},
        Pattern.OPAQUE: set(),
    }


SHARED_VALUE_CHOICES = ("auto", "keep", "recompute", "separate")


@dataclass
class FusionRules:
    """``may_follow[p]``: patterns a group of pattern ``p`` may be followed by in the same group;
    ``max_group_size``: most ops in a group; ``never_fuse``: op names (``"nn.softmax"``) kept alone;
    ``combine_anchors``: matrix products whose results meet in an elementwise op share a group;
    ``slice_anchors``: a ``strided_slice`` (a piece of ``split``) may follow an anchor's group;
    ``shared_values``: what to do with a value several groups read (``"auto"``, ``"keep"``,
    ``"recompute"``, ``"separate"``); ``recompute_max_ops``: the largest group recomputed in its readers;
    ``winograd``: 3x3 stride-1 convolutions may use Winograd's algorithm where it pays; ``conv_chains``: a
    convolution may follow a group holding one convolution (it reads that group's result)."""

    may_follow: dict[Pattern, set[Pattern]] = field(default_factory=default_may_follow)
    max_group_size: int = 256
    never_fuse: set[str] = field(default_factory=set)
    combine_anchors: bool = True
    slice_anchors: bool = True
    shared_values: str = "auto"
    recompute_max_ops: int = 4
    winograd: bool = True
    conv_chains: bool = False

    def __post_init__(self) -> None:
        table = {Pattern.parse(k): {Pattern.parse(v) for v in vs} for k, vs in self.may_follow.items()}
        self.may_follow = {p: table.get(p, set()) for p in Pattern}
        if isinstance(self.max_group_size, bool) or not isinstance(self.max_group_size, int) \
                or self.max_group_size < 1:
            raise ValueError(f"FusionRules: max_group_size must be a positive int, got {self.max_group_size!r}")
        if self.shared_values not in SHARED_VALUE_CHOICES:
            raise ValueError(f"FusionRules: shared_values must be one of {', '.join(SHARED_VALUE_CHOICES)}, "
                             f"got {self.shared_values!r}")
        if isinstance(self.recompute_max_ops, bool) or not isinstance(self.recompute_max_ops, int) \
                or self.recompute_max_ops < 0:
            raise ValueError(f"FusionRules: recompute_max_ops must be an int >= 0, got {self.recompute_max_ops!r}")
        self.never_fuse = set(self.never_fuse)
        for name in self.never_fuse:
            try:
                get_op(name)
            except ValueError as err:
                raise ValueError(f"FusionRules: never_fuse names an unknown op: {err}") from None

    @classmethod
    def no_fusion(cls) -> "FusionRules":
        """Rules under which every op is a group of its own."""
        return cls(may_follow={}, max_group_size=1, combine_anchors=False, slice_anchors=False,
                   shared_values="separate")

    def allows(self, producer: Pattern, consumer: Pattern) -> bool:
        """True when an op of pattern ``consumer`` may be fused after one of pattern ``producer``."""
        return consumer in self.may_follow[producer]

    def allow(self, producer: Pattern | str, consumers: Iterable[Pattern | str] | Pattern | str) -> "FusionRules":
        """Let ``consumers`` follow ``producer``; returns ``self`` for chaining."""
        self.may_follow[Pattern.parse(producer)] |= set(map(Pattern.parse, _listed(consumers)))
        return self

    def disallow(self, producer: Pattern | str, consumers: Iterable[Pattern | str] | Pattern | str) -> "FusionRules":
        """Stop ``consumers`` from following ``producer``; returns ``self`` for chaining."""
        self.may_follow[Pattern.parse(producer)] -= set(map(Pattern.parse, _listed(consumers)))
        return self

    def __str__(self) -> str:
        rows = [f"  after {p}: {', '.join(map(str, sorted(self.may_follow[p]))) or 'nothing'}" for p in Pattern]
        never = ", ".join(sorted(self.never_fuse)) or "none"
        return "\n".join(["FusionRules(may follow:"] + rows +
                         [f"  max_group_size: {self.max_group_size}", f"  never_fuse: {never}",
                          f"  combine_anchors: {self.combine_anchors}", f"  slice_anchors: {self.slice_anchors}",
                          f"  conv_chains: {self.conv_chains}",
                          f"  shared_values: {self.shared_values} "
                          f"(recompute up to {self.recompute_max_ops} ops)", f"  winograd: {self.winograd})"])


def _listed(value: Iterable[Pattern | str] | Pattern | str) -> list:
    return [value] if isinstance(value, (Pattern, str)) else list(value)
