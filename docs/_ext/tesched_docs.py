"""Sphinx directives whose content tesched itself produces when the documentation is built.

- ``.. tesched-environment::`` the table of every environment variable, from :data:`tesched.config.VARIABLES`;
- ``.. tesched-passes::`` the lowering pipeline, one row per pass of :data:`tesched.lower.pipeline.PASSES`;
- ``.. tesched-run::`` runs the Python code in its body in a fresh interpreter (this checkout's tesched,
  with the environment given by ``:env:``) and shows the code, then what it printed (``:stream:`` stdout,
  stderr or both); a failing run fails the build;
- ``.. tesched-phrasebook:: tvm|halide`` the phrasebook table of :mod:`phrasebook` (rows from ``docs/phrasebook.toml``);
- ``.. tesched-bench:: figures/suite.json`` the tables of a JSON file the benchmark suite wrote
  (:mod:`bench_tables`), with the command that wrote it.

Nothing here is pasted: every line of output comes from running tesched during the build, and every
benchmark figure from a JSON file written by the command its caption names.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.errors import PycodeError
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.docutils import SphinxDirective

import bench_tables
import phrasebook

ROOT = Path(__file__).resolve().parents[2]


def _cell(text: str) -> str:
    return text.replace("\n", " ")


def list_table(header: list[str], rows: list[list[str]], widths: str) -> list[str]:
    """The reST of a list-table (cells are reST themselves)."""
    lines = [".. list-table::", "   :header-rows: 1", f"   :widths: {widths}", ""]
    for row in [header] + rows:
        lines.append(f"   * - {_cell(row[0]) or ' '}")
        lines += [f"     - {_cell(cell) or ' '}" for cell in row[1:]]
    return lines


class _Generated(SphinxDirective):
    """A directive whose body is reST it generates."""

    def lines(self) -> list[str]:
        raise NotImplementedError

    def run(self) -> list[nodes.Node]:
        container = nodes.container()
        self.state.nested_parse(StringList(self.lines(), source="<generated>"), self.content_offset, container)
        return container.children


class EnvironmentTable(_Generated):
    """Every variable of :mod:`tesched.config` with its meaning and default."""

    def lines(self) -> list[str]:
        from tesched.config import VARIABLES
        return list_table(["variable", "what it does", "default"],
                          [[f"``{v.name}``", v.meaning, v.default] for v in VARIABLES], "22 53 25")


class PassTable(_Generated):
    """The passes of the lowering pipeline in order, with their phase."""

    def lines(self) -> list[str]:
        from tesched.lower.pipeline import PASSES
        return list_table(["#", "pass", "phase (``lower()`` runs ``lower``; ``build()`` runs both)"],
                          [[str(i), p.name, f"``{p.phase.value}``"] for i, p in enumerate(PASSES, 1)], "5 45 50")


class RunCode(SphinxDirective):
    """Run the body in a fresh interpreter; show it and its output."""

    has_content = True
    option_spec = {"env": directives.unchanged, "stream": directives.unchanged, "max-lines": directives.nonnegative_int}

    def run(self) -> list[nodes.Node]:
        code = "\n".join(self.content)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        for item in (self.options.get("env") or "").split():
            key, _, value = item.partition("=")
            env[key] = value
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                              timeout=600)
        if done.returncode != 0:
            raise self.error(f"tesched-run: the code failed ({done.returncode}):\n{done.stderr[-3000:]}")
        stream = self.options.get("stream", "stdout")
        output = {"stdout": done.stdout, "stderr": done.stderr, "both": done.stderr + done.stdout}[stream]
        limit = self.options.get("max-lines")
        lines = output.rstrip().splitlines()
        if limit and len(lines) > limit:
            lines = lines[:limit] + [f"... ({len(lines) - limit} more lines)"]
        shown = nodes.literal_block(code, code, language="python")
        printed = nodes.literal_block("\n".join(lines), "\n".join(lines), language="none")
        return [shown, nodes.paragraph(text=f"It printed ({stream}), when this page was built:"), printed]


class Phrasebook(_Generated):
    """The TVM -> tesched or Halide -> tesched table."""

    required_arguments = 1

    def lines(self) -> list[str]:
        source = self.arguments[0]
        if source not in phrasebook.SOURCES:
            raise self.error("tesched-phrasebook: the argument is tvm or halide")
        header, rows = phrasebook.table(source)
        return list_table(header, rows, "16 26 28 30")


class BenchTables(_Generated):
    """The tables of one JSON file of ``python -m tesched.bench [--graph] --json PATH`` (a path below docs/)."""

    required_arguments = 1

    def lines(self) -> list[str]:
        path = Path(self.env.srcdir) / self.arguments[0]
        self.env.note_dependency(str(path))
        try:
            document = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            raise self.error(f"tesched-bench: cannot read {path}: {err}")
        lines = [bench_tables.caption(document), ""]
        if bench_tables.warning(document):
            lines += [".. warning::", "", "   " + bench_tables.warning(document), ""]
        for table in bench_tables.tables(document):
            lines += [f".. rubric:: {table.title}", ""]
            lines += list_table(table.header, table.rows, "auto") + [""]
        return lines


def data_doc_comment(app: Sphinx, what: str, name: str, obj: object, options: object, lines: list[str]) -> None:
    """A public constant re-exported by a package (``tesched.intrin.INNER``) is documented by the ``#:``
    comment above its definition, found in the package's modules; autodoc would show the docstring of its
    type (``tuple``) instead."""
    if what != "data":
        return
    package, _, attr = name.rpartition(".")
    for module_name in sorted(m for m in sys.modules if m == package or m.startswith(package + ".")):
        if getattr(sys.modules[module_name], attr, None) is not obj:
            continue
        try:
            comment = ModuleAnalyzer.for_module(module_name).find_attr_docs().get(("", attr))
        except PycodeError:
            continue
        if comment:
            lines[:] = list(comment)
            return


def setup(app: Sphinx) -> dict[str, object]:
    """Register the directives and the doc-comment lookup."""
    app.connect("autodoc-process-docstring", data_doc_comment)
    app.add_directive("tesched-environment", EnvironmentTable)
    app.add_directive("tesched-passes", PassTable)
    app.add_directive("tesched-run", RunCode)
    app.add_directive("tesched-phrasebook", Phrasebook)
    app.add_directive("tesched-bench", BenchTables)
    return {"parallel_read_safe": True, "version": "1"}
