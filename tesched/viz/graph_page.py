"""The page of a graph executable: the graph after each pass, the fused groups, and every group's kernel.

Groups come from the fusion report of ``fuse_ops`` (``exe.fusion_report``): each is drawn as a box
around its ops, listing the edges into it that were not fused with the rule that stopped each, and
linking to its kernel's section further down. Groups that share a kernel (identical blocks compile once)
link to one section, which keeps a whole network's page small. The graph after each pass is the text of
``exe.pass_history``, folded. The graph package is not imported here at run time: ``import tesched``
loads this module, and only an executable (which has loaded it) asks for a graph page.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tesched.viz.html import anchor, attr, page, text
from tesched.viz.kernel_page import kernel_section

if TYPE_CHECKING:       # a graph page is written for an executable, which has loaded the graph package
    from tesched.graph.executor import Executable


def _kernel_anchors(exe: Executable) -> tuple[dict[str, str], list[str]]:
    """Per group name, the anchor of its kernel's section; and the sections, one per distinct kernel."""
    by_kernel: dict[int, str] = {}
    anchors: dict[str, str] = {}
    sections = []
    for group in exe.kernels:
        key = id(group.kernel)
        if key not in by_kernel:
            by_kernel[key] = anchor("k", group.name)
            sections.append(kernel_section(group.lowered, group.kernel, by_kernel[key]))
        anchors[group.name] = by_kernel[key]
    return anchors, sections


def _groups(exe: Executable, anchors: dict[str, str]) -> str:
    report = exe.fusion_report
    if report is None:
        return "<p class=\"note\">Built with fuse_ops disabled: every op is its own kernel.</p>"
    group_of = {member: name for (name, _), members in zip(report.groups, report.members) for member in members}
    incoming: dict[str, list[str]] = {}
    for edge in report.unfused:
        source = group_of.get(edge.producer, "?")
        incoming.setdefault(group_of.get(edge.consumer, ""), []).append(
            f"<div class=\"edge\">&larr; from {text(edge.producer)} in {text(source)}: <b>not fused</b>, "
            f"{text(edge.reason)}</div>")
    boxes = []
    for (name, _), members in zip(report.groups, report.members or [[] for _ in report.groups]):
        link = anchors.get(name)
        title = (f"<a href=\"#{link}\">{text(name)}</a>" if link else f"{text(name)} (external call)")
        chips = "".join(f"<span>{text(m)}</span>" for m in members)
        boxes.append(f"<div class=\"group\" id={attr(anchor('g', name))}><div><b>{title}</b></div>"
                     f"<div class=\"ops\">{chips}</div>{''.join(incoming.get(name, []))}</div>")
    summary = (f"<p class=\"note\">{len(report.groups)} fused groups; {len(report.unfused)} edges not fused, each "
               "with the rule that stopped it. Click a group's name for its kernel.</p>")
    return summary + "<div class=\"groups\">" + "".join(boxes) + "</div>"


def _passes(exe: Executable) -> str:
    if not exe.pass_history:
        return "<p class=\"note\">No pass history (the executable was not made by graph.build).</p>"
    items = []
    for k, (name, fn) in enumerate(exe.pass_history):
        label = "the input graph" if k == 0 else f"after {name}"
        items.append(f"<details><summary>{text(label)}</summary><div class=\"code\">{text(fn)}</div></details>")
    return "<div class=\"passes\">" + "".join(items) + "</div>"


def graph_page(exe: Executable, title: str | None = None) -> str:
    """The whole HTML document of ``exe``.

    Parameters
    ----------
    exe : Executable
        A graph executable (``tesched.graph.build``).
    title : str, optional
        The page's title (default: ``graph``).

    Returns
    -------
    str
        HTML.
    """
    name = title if title is not None else "graph"
    anchors, sections = _kernel_anchors(exe)
    external = "".join(f"<li>{text(c.name)}</li>" for c in exe.external_calls)
    header = (f"<header><h1>tesched: {text(name)}</h1><div class=\"meta\">{len(exe.kernels)} groups compiled to "
              f"{len(sections)} distinct kernels{'; external calls' if external else ''}</div></header>")
    body = (f"{header}<section><h2>Fused groups</h2>{_groups(exe, anchors)}"
            f"{'<h2>External calls</h2><ul>' + external + '</ul>' if external else ''}"
            f"<h2>The graph after each pass</h2>{_passes(exe)}</section><section>{''.join(sections)}</section>")
    return page(name, body)
