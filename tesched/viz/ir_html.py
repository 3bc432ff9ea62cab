"""The loop IR as HTML: the text ``print(ts.lower(...))`` shows, with clickable loops and folding produce blocks.

The IR printer (:class:`~tesched.ir.printer.IRPrinter`) writes the text; this subclass adds markers around
each loop header and each ``produce`` block. The markers carry a random key per page, so no user text can
forge one; everything between them is escaped. Each loop becomes a ``<span class="loop">`` whose data
attributes give its stage, name, kind, schedule origin and C line ranges; each produce block a
``<details>`` element (open) whose summary line carries the stage's time bar and redundancy factor.
"""
from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from tesched.ir import nodes as ir
from tesched.ir.printer import IRPrinter
from tesched.viz.html import attr, text


@dataclass(frozen=True)
class StageNote:
    """What the summary line of a stage's produce block shows besides the IR."""

    seconds: float | None = None        # time per call (None: not profiled)
    share: float = 0.0                  # width of the bar, 0..1
    parallel: bool = False              # seconds summed over threads
    redundancy: float | None = None     # points computed / points of the tensor (compute_at stages)


class _MarkedPrinter(IRPrinter):
    def __init__(self, key: str, loops: dict[int, int]):
        super().__init__()
        self.key, self.loops = key, loops
        self.found: dict[int, ir.For] = {}

    def token(self, what: str) -> str:
        return f"\x00{self.key}:{what}\x00"

    def visit_For(self, s: ir.For) -> str:
        out = super().visit_For(s)
        head, rest = out.split("\n", 1)
        pad = head[:len(head) - len(head.lstrip(" "))]
        k = self.loops[id(s)]
        self.found[k] = s
        self.names_of[k] = self.name_of(s.var)
        return f"{pad}{self.token(f'L{k}')}{head[len(pad):]}{self.token('/L')}\n{rest}"

    def visit_Produce(self, s: ir.Produce) -> str:
        out = super().visit_Produce(s)
        self.produces.append(s.stage)
        return f"{self.token(f'P{len(self.produces) - 1}')}{out}{self.token('/P')}"

    names_of: dict[int, str]
    produces: list[str]


def _loop_attrs(loop: ir.For, name: str, k: int, ranges: list[tuple[int, int]] | None) -> str:
    kind = str(loop.kind)
    classes = f"loop k-{kind}" + (" reduction" if loop.reduction else "")
    c = ",".join(f"{a}-{b}" for a, b in ranges or [])
    origin = loop.origin or "the isl AST generator"
    return (f"<span class={attr(classes)} tabindex=\"0\" role=\"button\" data-loop=\"{k}\" data-stage={attr(loop.stage)}"
            f" data-name={attr(name)} data-kind={attr(kind + (' reduction' if loop.reduction else ''))}"
            f" data-origin={attr(origin)} data-c={attr(c)}>")


def _note(note: StageNote | None) -> str:
    if note is None:
        return ""
    out = ""
    if note.redundancy is not None:
        out += f"<span class=\"red\">computes {note.redundancy:.2f}x its points</span>"
    if note.seconds is not None:
        where = " (thread-seconds)" if note.parallel else ""
        width = max(1, round(120 * note.share))
        out += (f"<span class=\"t\"><span class=\"bar{' par' if note.parallel else ''}\" style=\"width:{width}px\">"
                f"</span>{note.seconds * 1e6:.1f} &micro;s{where}</span>")
    return out


def ir_html(body: ir.Stmt, loops: list[ir.For], c_ranges: dict[int, list[tuple[int, int]]] | None,
            notes: dict[str, StageNote], header: str = "") -> str:
    """``body`` as HTML lines (for a ``<div class="code">``).

    Parameters
    ----------
    body : Stmt
        The lowered function's body.
    loops : list of For
        Its loops, numbered (see :func:`tesched.viz.c_lines.numbered_loops`).
    c_ranges : dict or None
        Per loop number, the 1-based C line ranges it became.
    notes : dict
        Per stage name, what its produce line shows (time bar, redundancy).
    header : str
        Plain text printed before the body (the function's signature).

    Returns
    -------
    str
        HTML: one ``<span class="l">`` per line.
    """
    key = secrets.token_hex(8)
    printer = _MarkedPrinter(key, {id(loop): k for k, loop in enumerate(loops)})
    printer.names_of, printer.produces = {}, []
    marked = header + printer.stmt(body, 1)
    parts = re.split(f"\x00{key}:([^\x00]*)\x00", marked)
    out: list[str] = []
    line: list[str] = []
    in_summary: list[int] = []

    def end_line() -> None:
        note = _note(notes.get(printer.produces[in_summary[-1]])) if in_summary else ""
        out.append(f"<span class=\"l\">{''.join(line)}{note}</span>")
        line.clear()
        if in_summary:
            in_summary.pop()
            out.append("</summary>")

    for index, part in enumerate(parts):
        if index % 2 == 0:
            pieces = part.split("\n")
            for j, piece in enumerate(pieces):
                line.append(text(piece))
                if j < len(pieces) - 1:
                    end_line()
            continue
        if part.startswith("L"):
            k = int(part[1:])
            line.append(_loop_attrs(printer.found[k], printer.names_of[k], k, (c_ranges or {}).get(k)))
        elif part == "/L":
            line.append("</span>")
        elif part.startswith("P"):
            p = int(part[1:])
            stage = printer.produces[p]
            out.append(f"<details class=\"produce\" open data-stage={attr(stage)}><summary>")
            in_summary.append(p)
        elif part == "/P":
            out.append("</details>")
    if line and "".join(line):
        end_line()
    return "".join(out)
