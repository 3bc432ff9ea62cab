"""The node classes of the loop IR that ``lower()`` returns (import them from :mod:`.nodes`).

Statements: :class:`For` (with its :class:`~tesched.ir.kinds.LoopKind`), :class:`IfThenElse`,
:class:`Block`, :class:`Store`/:class:`VStore`, :class:`Allocate` (a buffer local to its body),
:class:`Assign` (to a local scalar: buffer origins, promoted registers), :class:`LetStmt`,
:class:`Registers`, :class:`IntrinsicCall`, :class:`Produce` (marks where a stage is computed) and
:class:`Timer` (profiling instrumentation).
Expressions are those of :mod:`tesched.te.expr` plus :class:`Load`/:class:`VLoad` from a :class:`Buffer`,
:class:`VLoadStrided`, :class:`VLoadMasked`, :class:`VGather`, :class:`Ramp`, :class:`Broadcast`, :class:`HReduce`, :class:`Lane`,
:class:`VCast`, :class:`ReduceInput`,
:class:`Address` and :class:`CheckedIndex` (a data-dependent index checked against its tensor's extent when
the kernel runs).

A statement's children are its fields that hold expressions, statements or sequences of them, except
the variables it declares (``binds``); :mod:`.visitor` walks and rebuilds statements from that alone, so
a new node is one dataclass here plus one method in the printer (:mod:`.printer`) and the C generator.
This module gathers them from :mod:`.exprs` and :mod:`.stmts` without the printer (which imports it);
:mod:`.nodes` is the same with the printer installed. It knows nothing of isl or C.
"""
from __future__ import annotations

from tesched.ir.exprs import (
    Address,
    Broadcast,
    Buffer,
    BufferScope,
    CheckedIndex,
    flat_index,
    HReduce,
    is_flat,
    Lane,
    Load,
    LoopVar,
    OriginVar,
    Ramp,
    ReduceInput,
    RegisterVar,
    split_dtype,
    VCast,
    vector_dtype,
    VGather,
    VLoad,
    VLoadMasked,
    VLoadStrided,
)
from tesched.ir.stmts import (
    Allocate,
    Assign,
    Block,
    For,
    IfThenElse,
    IntrinsicCall,
    LetStmt,
    Prefetch,
    Produce,
    Registers,
    seq,
    set_formatter,
    Stmt,
    Store,
    Timer,
    VStore,
)

__all__ = [
    "Address",
    "Allocate",
    "Assign",
    "Block",
    "Broadcast",
    "Buffer",
    "BufferScope",
    "CheckedIndex",
    "flat_index",
    "For",
    "HReduce",
    "Lane",
    "IfThenElse",
    "IntrinsicCall",
    "is_flat",
    "LetStmt",
    "Load",
    "LoopVar",
    "OriginVar",
    "Prefetch",
    "Produce",
    "Ramp",
    "ReduceInput",
    "Registers",
    "RegisterVar",
    "seq",
    "set_formatter",
    "split_dtype",
    "Stmt",
    "Store",
    "Timer",
    "VCast",
    "vector_dtype",
    "VGather",
    "VLoad",
    "VLoadMasked",
    "VLoadStrided",
    "VStore",
]
