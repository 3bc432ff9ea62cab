"""Judging an exception: is it one of tesched's own errors, and does its message name what is wrong?

A tesched error is a :class:`tesched.TeschedError`, or a ``TypeError``/``ValueError``/``IndexError``/
``OverflowError``/``MemoryError`` raised by tesched's own code (the innermost frame of its traceback is in
the ``tesched`` package). Anything else (an ``AttributeError``, a message raised inside NumPy, islpy or
cffi) is a leak of internals.
"""
from __future__ import annotations

import traceback
from pathlib import Path

import tesched as ts

PACKAGE = Path(ts.__file__).resolve().parent
CHECK_TYPES = (TypeError, ValueError, IndexError, OverflowError, MemoryError)


def raised_by_tesched(err: BaseException) -> bool:
    frames = traceback.extract_tb(err.__traceback__)
    return bool(frames) and Path(frames[-1].filename).resolve().is_relative_to(PACKAGE)


def is_tesched_error(err: BaseException) -> bool:
    if isinstance(err, ts.TeschedError):
        return True
    return isinstance(err, CHECK_TYPES) and type(err).__module__ == "builtins" and raised_by_tesched(err)


def describe(err: BaseException) -> str:
    return f"{type(err).__module__}.{type(err).__name__}: {str(err)[:300]}"
