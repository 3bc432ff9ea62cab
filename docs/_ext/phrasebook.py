"""The phrasebook: TVM ``te`` and Halide concepts, one row each, with tesched's spelling.

The rows are data, in ``docs/phrasebook.toml``; this module reads them into :class:`Row` objects
(:data:`ROWS`) and lays them out as the two tables (TVM -> tesched, Halide -> tesched), once as reST cells
(the ``tesched-phrasebook`` directive of :mod:`tesched_docs`) and once as Markdown
(``docs/phrasebook.md``, readable without building the site; ``python docs/_ext/phrasebook.py`` rewrites
it). Each row names the tesched objects its spelling uses (``uses``, which must exist) or, for a concept
tesched lacks, the names it would have (``missing``, which must not exist yet): ``tests/test_docs.py``
resolves both, so a row cannot claim a name that is not there, and a row saying "not supported yet" fails
the test the day the feature lands, asking for the row to be rewritten. It also checks that the Markdown
file is the one the data gives.
"""
from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

NOT_YET = "not supported yet"
DATA = Path(__file__).resolve().parent.parent / "phrasebook.toml"
MARKDOWN = DATA.with_suffix(".md")
SOURCES = {"tvm": "TVM te", "halide": "Halide"}


@dataclass(frozen=True)
class Row:
    """One concept: how TVM and Halide spell it, how tesched does (None: not supported), and why."""

    concept: str
    tvm: str
    halide: str
    tesched: str | None = None     # None: not supported
    note: str = ""
    uses: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    planned: bool = True            # False: not supported by design (no "yet")

    def tesched_text(self) -> str:
        """The tesched cell: the spelling, or *not supported*."""
        if self.tesched is None:
            return f"*{NOT_YET}*" if self.missing and self.planned else "*not supported*"
        return self.tesched


def load(path: Path = DATA) -> tuple[Row, ...]:
    """The rows of the TOML file ``path`` (``[[row]]`` tables with the fields of :class:`Row`)."""
    with open(path, "rb") as stream:
        data = tomllib.load(stream)
    return tuple(Row(**{**row, "uses": tuple(row.get("uses", ())), "missing": tuple(row.get("missing", ()))})
                 for row in data["row"])


ROWS: tuple[Row, ...] = load()


def table(source: str) -> tuple[list[str], list[list[str]]]:
    """The header and rows (reST cells) of the ``source`` -> tesched table; ``source`` is tvm or halide.
    Rows whose ``source`` cell says "no counterpart" are left out."""
    header = ["concept", SOURCES[source], "tesched", "notes"]
    rows = [[row.concept, getattr(row, source), row.tesched_text(), row.note] for row in ROWS
            if not getattr(row, source).startswith("no counterpart")]
    return header, rows


def _markdown_cell(rst: str) -> str:
    """A reST cell as a Markdown table cell: ````code```` as ```code```, ``|`` escaped."""
    return re.sub(r"``(.+?)``(?!`)", r"`\1`", rst).replace("|", "\\|")


def markdown() -> str:
    """The whole of ``docs/phrasebook.md``."""
    lines = ["# Phrasebook: TVM and Halide in tesched", "",
             "<!-- generated from docs/phrasebook.toml by `python docs/_ext/phrasebook.py`: edit the TOML file -->",
             "", "One row per concept: how TVM's `te` or Halide says it, how tesched says it, or that tesched "
             "cannot, and why. tesched keeps the names of TVM's legacy `te` API, so most TVM rows read the same. "
             "`tests/test_docs.py` checks every row against the code: every tesched name a row uses exists."]
    for source, title in SOURCES.items():
        header, rows = table(source)
        lines += ["", f"## From {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(_markdown_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    MARKDOWN.write_text(markdown())
    print(f"wrote {MARKDOWN}", file=sys.stderr)
