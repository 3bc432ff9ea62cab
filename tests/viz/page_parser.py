"""Read back what a tesched page shows: its loops (with their data attributes), its C lines, its text."""
from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path


class Page(HTMLParser):
    """Loops (``span.loop`` attributes and text), C lines (``span.cl`` text), scripts, and all text."""

    def __init__(self, path: str | Path):
        super().__init__(convert_charrefs=True)
        self.loops: list[dict[str, str]] = []
        self.c_lines: list[str] = []
        self.scripts = 0
        self.text: list[str] = []
        self._open: list[tuple[str, dict | None]] = []
        self.feed(Path(path).read_text())

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        target = None
        if tag == "span" and "loop" in classes:
            target = dict(a, text="")
            self.loops.append(target)
        elif tag == "span" and "cl" in classes:
            self.c_lines.append("")
            target = {"cl": len(self.c_lines) - 1}
        if tag == "script":
            self.scripts += 1
        self._open.append((tag, target))

    def handle_endtag(self, tag):
        while self._open:
            if self._open.pop()[0] == tag:
                break

    def handle_data(self, data):
        self.text.append(data)
        for _, target in reversed(self._open):
            if target is None:
                continue
            if "cl" in target:
                self.c_lines[target["cl"]] += data
            else:
                target["text"] += data
            break

    def lines_of(self, loop: dict[str, str]) -> list[str]:
        """The C lines a loop's ``data-c`` ranges name (1-based, inclusive)."""
        out = []
        for part in filter(None, loop["data-c"].split(",")):
            a, b = map(int, part.split("-"))
            out += self.c_lines[a - 1:b]
        return out
