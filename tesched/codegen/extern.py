"""The C text of the user's functions a kernel calls (``ts.call_pure_extern``, ``ts.extern``).

:func:`extern_calls` finds them in a lowered function's stages, one per name (two different sources under
one name are refused, naming it). :func:`extern_text` writes each source (or, for a C library function,
a reference to it that fails when no header declares it) under a ``#line 1 "call_pure_extern <name>"``
directive (``extern <name>`` for the function of a ``ts.extern`` stage), so that the compiler's diagnostic for a source that does not compile names the function and
the line of the user's text; a last ``#line`` gives the generated code after it its own line numbers
again. This module writes text only.
"""
from __future__ import annotations

from tesched.errors import BuildError
from tesched.lower.func import LoweredFunc
from tesched.te.extern import ExternCall
from tesched.te.tensor import ComputeOp
from tesched.te.visit import collect


def extern_calls(func: LoweredFunc) -> list[ExternCall]:
    """One call per extern function of ``func``'s stages, in order of first appearance."""
    found: dict[str, ExternCall] = {}
    for stage in func.model.schedule.stages:
        if not isinstance(stage.op, ComputeOp):
            continue
        for call in collect(stage.op.body, ExternCall):
            known = found.setdefault(call.name, call)
            if known.source != call.source:
                raise BuildError(f"{func.name}: extern function {call.name} is given two different C sources "
                                 f"(in stage {stage.op.name}); one name, one function")
    return list(found.values())


def extern_text(calls: list[ExternCall], first_line: int, file: str) -> str:
    """The definitions of ``calls`` (or a reference to each C library function), starting at line
    ``first_line`` of ``file``."""
    lines: list[str] = []
    for call in calls:
        lines.append(f'#line 1 "{call.label} {call.name}"')
        if call.source is not None:
            lines += call.source.splitlines()
        else:       # a C library function: an undeclared one is an error naming it, here
            lines.append(f"static inline void ts_extern_{call.name}(void) {{ (void)&{call.name}; }}")
    if lines:
        lines.append(f'#line {first_line + len(lines) + 1} "{file}"')
    return "\n".join(lines)
