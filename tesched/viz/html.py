"""The HTML of tesched's pages: escaping, the page skeleton, and the inline style and script.

Every page is one self-contained file: the style sheet and the script (``assets/page.css`` and
``assets/page.js``, written for these pages) are inlined, and nothing is loaded from the network. Every
piece of text that comes from the user (stage, tensor, loop and graph names, C and IR text) goes through
:func:`text` or :func:`attr`, so a name such as ``<script>`` shows as text. This module builds strings;
what goes on a page is decided by :mod:`.kernel_page` and :mod:`.graph_page`.
"""
from __future__ import annotations

import functools
import html
from pathlib import Path

ASSETS = Path(__file__).resolve().parent / "assets"


def text(value: object) -> str:
    """``value`` as HTML text (``<``, ``>``, ``&`` and quotes escaped)."""
    return html.escape(str(value), quote=True)


def attr(value: object) -> str:
    """``value`` as a double-quoted attribute value (quotes included)."""
    return f'"{html.escape(str(value), quote=True)}"'


def anchor(prefix: str, name: str) -> str:
    """A fragment identifier for ``name``: only letters, digits, ``-`` and ``_`` (others by code point)."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_") else f"-{ord(c):x}-" for c in name)
    return f"{prefix}-{safe}"


@functools.cache
def _asset(name: str) -> str:
    return (ASSETS / name).read_text()


def page(title: str, body: str) -> str:
    """A whole HTML document with ``title`` (user text, escaped here) around ``body`` (HTML).

    Parameters
    ----------
    title : str
        The page's title.
    body : str
        The page's content, already HTML.

    Returns
    -------
    str
        The document, with the style sheet and script inlined.
    """
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
            f"<title>{text(title)}</title><style>{_asset('page.css')}</style></head>\n<body>\n{body}\n"
            f"<script>{_asset('page.js')}</script></body></html>\n")


def legend() -> str:
    """The key of the loop colours."""
    items = [("k-parallel", "var(--par)", "parallel"), ("k-vectorized", "var(--vec)", "vectorized"),
             ("k-unrolled", "var(--unr)", "unrolled"), ("k-serial", "#aaa", "serial (italic: reduction)")]
    return "<div class=\"legend note\">" + "".join(
        f"<span><span class=\"sw\" style=\"background:{colour}\"></span>{label}</span>"
        for _, colour, label in items) + " &mdash; click a loop to see its C lines and the primitive that made it</div>"


def write(path: str | Path, document: str) -> Path:
    """Write ``document`` to ``path`` (UTF-8) and return the path."""
    out = Path(path)
    out.write_text(document, encoding="utf-8")
    return out
