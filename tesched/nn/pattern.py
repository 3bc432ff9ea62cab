"""Op pattern kinds, and how a stage of the operator library carries its kind and its op name.

The kinds are TVM's (``OpPatternKind``), ordered from the easiest to fuse to the hardest: ``ELEMWISE``
(one input element per output element, same shape), ``BROADCAST`` (like elemwise, with NumPy
broadcasting), ``INJECTIVE`` (each output element reads one input element, any index map: reshape, pad,
transpose), ``COMM_REDUCE`` (a commutative reduction), ``OUT_ELEMWISE_FUSABLE`` (a reduction such as conv2d or
dense whose output an elementwise epilogue may be fused into), ``OPAQUE`` (nothing fuses with it).

Every stage built by :mod:`tesched.nn` records its kind in the compute's ``tag`` and the op that made it in
``attrs["nn.op"]``; :mod:`tesched.nn.schedule` reads them to pick default schedules. This module knows
nothing of fusion rules (see :mod:`tesched.graph.fusion_rules`).
"""
from __future__ import annotations

import enum
from typing import Callable

import tesched as ts
from tesched.te.tensor import Tensor

OP_ATTR = "nn.op"


class Pattern(enum.IntEnum):
    """The fusion kind of an op; a larger value is harder to fuse (``max`` combines two kinds)."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    OPAQUE = 8

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, value: "Pattern | str") -> "Pattern":
        """A pattern from itself or its lower-case name (``"elemwise"``)."""
        if isinstance(value, Pattern):
            return value
        try:
            return cls[str(value).upper()]
        except KeyError:
            names = ", ".join(str(p) for p in cls)
            raise ValueError(f"unknown op pattern {value!r}; expected one of {names}") from None


def compute(shape, fcompute: Callable[..., object], name: str, pattern: Pattern, op: str) -> Tensor:
    """``ts.compute`` of a stage of op ``op`` with pattern ``pattern`` recorded on it."""
    return ts.compute(shape, fcompute, name=name, tag=str(pattern), attrs={OP_ATTR: op})


def pattern_of(tensor: Tensor) -> Pattern:
    """The pattern recorded on the stage producing ``tensor`` (``OPAQUE`` if none was recorded)."""
    tag = getattr(tensor.op, "tag", "")
    return Pattern.parse(tag) if tag else Pattern.OPAQUE


def op_of(tensor: Tensor) -> str | None:
    """The name of the operator-library op whose stage produces ``tensor``, if any."""
    return getattr(tensor.op, "attrs", {}).get(OP_ATTR)
