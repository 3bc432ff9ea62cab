"""The ``argv`` companion of a generated C function: one calling convention for any number of arguments.

For ``int f(const float *a, float *b, int64_t n)`` it writes::

    int f_argv(void *const *args) {
      return f((const float *)args[0], (float *)args[1], *(const int64_t *)args[2]);
    }

Each entry of ``args`` is an array's data pointer for an array parameter, and the address of the value for
a scalar parameter (Halide's ``_argv`` convention). tesched's C call path (``runtime/tesched_call.c``)
calls every kernel, graph step and exported entry through it, so no function has an argument limit: a
C caller cannot call a function of *n* parameters without naming *n* types, but it can always pass one
pointer. A ``void`` function's companion returns 0. This module writes C text only; it does not decide
which functions get a companion.
"""
from __future__ import annotations

from typing import Sequence

ARGV_SUFFIX = "_argv"


def is_pointer(c_type: str) -> bool:
    """Whether the C parameter type ``c_type`` is a pointer (an array), not a scalar."""
    return c_type.rstrip().endswith("*")


def argv_function(function: str, c_types: Sequence[str], name: str | None = None, returns_int: bool = True,
                  qualifiers: str = "", by_address: bool = False) -> str:
    """The C definition of ``name`` (default ``function + "_argv"``) calling ``function``, whose parameter
    types are ``c_types`` in order, with the arguments in ``args``; ``qualifiers`` prefix the definition
    (``"TS_PUBLIC"``). With ``by_address``, the function is not named at link time: ``args[0]`` holds its
    address and the arguments follow (a shim for a library compiled elsewhere)."""
    name = name or function + ARGV_SUFFIX
    first = 1 if by_address else 0
    values = [f"({t})args[{k + first}]" if is_pointer(t) else f"*(const {t} *)args[{k + first}]"
              for k, t in enumerate(c_types)]
    if by_address:
        function = f"(({'int' if returns_int else 'void'} (*)({', '.join(c_types) or 'void'}))args[0])"
    call = f"{function}({', '.join(values)})"
    body = f"  return {call};" if returns_int else f"  {call};\n  return 0;"
    head = f"{qualifiers} " if qualifiers else ""
    return f"{head}int {name}(void *const *args) {{\n{body}\n}}"


def argv_prototype(name: str) -> str:
    """``int name(void *const *args)``: the companion's prototype."""
    return f"int {name}(void *const *args)"
