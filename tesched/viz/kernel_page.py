"""The page of one kernel: its loop IR beside its C, stage times, and tile drawings.

Built from a :class:`~tesched.lower.func.LoweredFunc` (C generated for the current target, not compiled)
or a :class:`~tesched.driver.kernel.Kernel` (its own C; stage times when it was built with
``profile=True`` and has run). :func:`kernel_section` is the part a graph page repeats per kernel.
"""
from __future__ import annotations

from tesched.driver.kernel import Kernel
from tesched.driver.profile import Profile
from tesched.lower.func import LoweredFunc
from tesched.poly.tiles import tile_geometry
from tesched.target import current_target
from tesched.viz.c_lines import c_lines, numbered_loops
from tesched.viz.html import attr, legend, text
from tesched.viz.ir_html import StageNote, ir_html
from tesched.viz.tiles import caption, projection, tile_svg


def _signature(func: LoweredFunc) -> str:
    first = str(func).split("\n")
    return "\n".join(line for line in first if line.startswith("def ")) + "\n"


def _profile_of(kernel: Kernel | None) -> Profile | None:
    if kernel is None or not kernel.timed_regions:
        return None
    if kernel.last_profile is not None:
        return kernel.last_profile
    counted = kernel.profile_counters()
    return counted if counted.calls else None


def _notes(func: LoweredFunc, profile: Profile | None) -> dict[str, StageNote]:
    times = {r.stage: r for r in profile.regions} if profile is not None else {}
    longest = max((r.seconds for r in times.values()), default=0.0) or 1.0
    notes = {}
    for sm in func.model.stages:
        r = times.get(sm.name)
        notes[sm.name] = StageNote(r.seconds if r else None, (r.seconds / longest) if r else 0.0,
                                   bool(r and r.parallel), func.redundancy.get(sm.name))
    return notes


def _profile_table(profile: Profile | None, profiled: bool) -> str:
    if profile is None:
        hint = ("call the kernel, or kernel.profile(*arrays) to also measure what the timers cost" if profiled else
                "build with profile=True and call kernel.profile(*arrays) to see time per loop nest")
        return f"<p class=\"note\">No stage times: {hint}.</p>"
    rows = "".join(f"<tr><td>{text(r.label)}</td><td>{r.seconds * 1e6:.1f} &micro;s{' (thread-seconds)' if r.parallel else ''}"
                   f"</td><td>{r.runs:g} runs per call</td></tr>" for r in profile.regions)
    over = ("timers' overhead not measured (counters of the kernel's own calls; kernel.profile(*arrays) measures it)")
    if profile.instrumented is not None and profile.plain:
        over = (f"timers' overhead {(profile.instrumented / profile.plain - 1) * 100:+.1f}%: "
                f"{profile.instrumented * 1e6:.1f} &micro;s per call instrumented vs {profile.plain * 1e6:.1f} &micro;s "
                f"without timers (medians of {profile.calls} calls each, in turns)")
    return (f"<p class=\"note\">Time per call inside C: {profile.total * 1e6:.1f} &micro;s (median over {profile.calls} "
            f"calls); {over}.</p><table class=\"prof\"><tr><th>region</th><th>time per call</th><th></th></tr>{rows}</table>")


def _tiles(func: LoweredFunc, anchor: str) -> str:
    figures = []
    for k, sm in enumerate(func.model.stages):
        g = tile_geometry(func.model, sm)
        if g is None:
            if sm.parent is not None and func.model.params:
                figures.append(f"<p class=\"note\">{text(sm.name)}: no drawing, its sizes are symbolic.</p>")
            continue
        p = projection(g)
        drawing = tile_svg(p, f"{anchor}-{k}")
        figures.append(f"<figure class=\"tilefig\">{drawing}<figcaption class=\"note\">{caption(p)}</figcaption></figure>")
    if not figures:
        return ""
    return "<h2>Tiles and halos</h2><div class=\"tiles\">" + "".join(figures) + "</div>"


def kernel_section(func: LoweredFunc, kernel: Kernel | None = None, anchor: str = "kernel") -> str:
    """The HTML section of one kernel (IR beside C, times, tiles), with id ``anchor``.

    Parameters
    ----------
    func : LoweredFunc
        Its lowered function.
    kernel : Kernel, optional
        The compiled kernel (its C, target and profile); without it C is generated for the current target.
    anchor : str
        The section's id (safe characters only).

    Returns
    -------
    str
        HTML.
    """
    target = kernel.target if kernel is not None and kernel.target is not None else current_target()
    profiled = kernel is not None and bool(kernel.timed_regions)
    src, ranges = c_lines(func, target, profiled, kernel.c_source if kernel is not None else None)
    loops = numbered_loops(func.body)
    profile = _profile_of(kernel)
    notes = _notes(func, profile)
    ir_text = ir_html(func.body, loops, ranges, notes, _signature(func))
    c_text = "".join(f"<span class=\"cl\">{text(line)}</span>" for line in src.source.rstrip("\n").split("\n"))
    built = "compiled" if kernel is not None else f"generated for {text(target.name)}, not compiled"
    mapping = "" if ranges is not None else "<p class=\"note\">C line ranges unavailable for this kernel.</p>"
    return (f"<section class=\"kernel\" id={attr(anchor)} data-kernel={attr(func.name)}>"
            f"<h2>Kernel {text(func.name)}</h2>{legend()}{_profile_table(profile, profiled)}{mapping}"
            "<div class=\"loopinfo\">Click a loop.</div>"
            f"<div class=\"panes\"><div><div class=\"note\">loop IR (lower)</div><div class=\"code ir\">{ir_text}</div></div>"
            f"<div><div class=\"note\">C ({built})</div><div class=\"code c\">{c_text}</div></div></div>"
            f"{_tiles(func, anchor)}</section>")
