"""Pinning the target of tests that assert generated code, so that they pass on any x86-64.

A test that checks what the code generator wrote (a 16-lane load, a register kept in a variable, a
schedule decision) builds for a named target, whatever CPU runs the suite; gcc compiles code for a target
the host cannot run. The numbers are checked on the host: with the pinned kernel where this CPU can run
it, else with the same schedule built for the host.
"""
from __future__ import annotations

from typing import Callable, TypeVar

import tesched as ts

AVX512 = "x86-64-avx512"
T = TypeVar("T")


def runs_here(target: str) -> bool:
    """Whether this CPU has every instruction-set feature code built for ``target`` may use."""
    return ts.Target(target).isa_features <= ts.Target("host").isa_features


def pinned(make: Callable[[], T], target: str = AVX512) -> tuple[T, T]:
    """``(built for target, runnable here)``: ``make()`` under ``target``, and the same kernel or, where this
    CPU cannot run it, ``make()`` under the host."""
    with ts.Target(target):
        code = make()
    if runs_here(target):
        return code, code
    with ts.Target("host"):
        return code, make()
