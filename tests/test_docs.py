"""The documentation (``docs/``): the API reference covers every public name, and the phrasebook's rows
name only what exists (and, for "not supported yet", what does not exist yet).

The reference is built with Sphinx, without the tutorials (``TESCHED_DOCS_TUTORIALS=0``), and its
inventory (``objects.inv``) is read back: every name of every public module must resolve to an object the
reference documents, under its public name or the name of its defining module. ``.ci/run`` builds the whole
site (tutorials run, warnings as errors).
"""
from __future__ import annotations

import html
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))
import bench_tables  # noqa: E402
import phrasebook  # noqa: E402

from tests.public_api import public_names, resolve  # noqa: E402

def test_phrasebook_names_what_exists():
    wrong = []
    for row in phrasebook.ROWS:
        for dotted in row.uses:
            try:
                resolve(dotted)
            except (ImportError, AttributeError):
                wrong.append(f"{row.concept!r} uses {dotted}, which does not exist")
        for dotted in row.missing:
            try:
                resolve(dotted)
                wrong.append(f"{row.concept!r} says {phrasebook.NOT_YET!r}, but {dotted} exists now: write its "
                             f"tesched spelling in docs/phrasebook.toml")
            except (ImportError, AttributeError):
                pass
        assert not (row.tesched and row.missing), f"{row.concept!r}: a supported row names no missing feature"
        assert row.tesched is not None or row.note, f"{row.concept!r}: say why it is not supported"
    assert not wrong, "\n".join(wrong)


def test_the_markdown_phrasebook_is_generated_from_the_data():
    """``docs/phrasebook.md`` (read without the site) holds exactly the rows of ``docs/phrasebook.toml``."""
    assert phrasebook.MARKDOWN.read_text() == phrasebook.markdown(), \
        "docs/phrasebook.md is out of date: run python docs/_ext/phrasebook.py"
    text = phrasebook.MARKDOWN.read_text()
    for source in phrasebook.SOURCES:
        _, rows = phrasebook.table(source)
        assert all(f"| {row[0]} |" in text for row in rows)


def test_phrasebook_covers_the_concepts_users_look_for():
    concepts = " ".join(row.concept for row in phrasebook.ROWS)
    for concept in ("input tensor", "computed tensor", "reduction domain", "split", "tile", "reorder", "fuse",
                    "vectorize", "unroll", "parallel", "compute at", "inline", "tensorize", "read cache",
                    "write cache", "rfactor", "bound", "store at", "boundary condition", "automatic scheduling",
                    "frontend"):
        assert concept in concepts, concept


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The API reference and the generated pages, built without the tutorials, warnings as errors."""
    pytest.importorskip("sphinx", reason="Sphinx is not installed (pip install tesched[docs])")
    pytest.importorskip("furo", reason="the furo theme is not installed (pip install tesched[docs])")
    out = tmp_path_factory.mktemp("docs")
    env = dict(os.environ, TESCHED_DOCS_TUTORIALS="0")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-n", "-W", "--keep-going",
                           str(DOCS), str(out)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, f"the API reference does not build cleanly:\n{done.stderr[-4000:]}"
    return out


@pytest.fixture(scope="module")
def inventory(site: Path) -> dict[str, dict[str, object]]:
    from sphinx.util.inventory import InventoryFile
    with open(site / "objects.inv", "rb") as stream:
        return InventoryFile.load(stream, "", lambda base, uri: uri)


def test_every_public_name_is_in_the_reference(inventory):
    documented_names = {name for kind, entries in inventory.items() if kind.startswith("py:") for name in entries}
    documented_ids = set()
    for name in documented_names:
        try:
            documented_ids.add(id(resolve(name)))
        except (ImportError, AttributeError):
            pass
    missing = []
    for dotted, obj in public_names().items():
        if inspect.ismodule(obj):
            if obj.__name__ not in inventory.get("py:module", {}):
                missing.append(f"{dotted} (module {obj.__name__})")
        elif inspect.isfunction(obj) or inspect.isclass(obj) or callable(obj):
            if id(obj) not in documented_ids:
                missing.append(dotted)
        elif dotted not in documented_names:        # constants: by name (equal values may share an id)
            missing.append(dotted)
    assert not missing, f"public names missing from the API reference (docs/api/*.rst): {missing}"


def test_generated_pages_hold_what_tesched_produces(site):
    from tesched.config import VARIABLES
    from tesched.lower.pipeline import PASSES
    environment = (site / "environment.html").read_text()
    assert all(v.name in environment for v in VARIABLES)
    lowering = (site / "lowering.html").read_text()
    assert all(p.name in lowering for p in PASSES)
    assert "--- after isl AST generation" in lowering        # the TESCHED_DEBUG log, captured at build time
    assert "produce D" in lowering                           # and the loop IR the program printed
    page = (site / "phrasebook.html").read_text()
    assert all(row.concept in page for row in phrasebook.ROWS)
    figures = (site / "figures.html").read_text()
    for path in figure_files():
        document = json.loads(path.read_text())
        assert all(html.escape(w["name"], quote=False) in figures for w in document["workloads"])


def figure_files() -> list[Path]:
    """The JSON files the figures page renders (its ``tesched-bench`` directives)."""
    page = (DOCS / "figures.rst").read_text()
    return [DOCS / line.split("::", 1)[1].strip() for line in page.splitlines()
            if line.startswith(".. tesched-bench::")]


def test_the_figures_page_renders_every_measurement_of_its_json_files():
    """Each committed benchmark JSON names the command that wrote it, and its tables show every workload's
    median and minimum of every variant, as measured (nothing typed in by hand)."""
    files = figure_files()
    assert files and all(path.exists() for path in files), files
    for path in files:
        document = json.loads(path.read_text())
        assert document["command"].startswith("python -m tesched.bench") and f"--json {path.relative_to(ROOT)}" \
            in document["command"], f"{path}: regenerate it with the command the figures page gives"
        first = bench_tables.tables(document)[0]
        assert [row[0] for row in first.rows] == [bench_tables.escape(w["name"]) for w in document["workloads"]]
        for row, workload in zip(first.rows, document["workloads"]):
            for label, variant in workload["variants"].items():
                cell = row[first.header.index(f"{label} µs")]
                assert cell == f"{variant['median_us']:.1f} ({variant['min_us']:.1f})", (path, workload["name"], label)


@pytest.mark.parametrize("graph", [False, True], ids=["suite", "graph"])
def test_the_json_the_suite_writes_renders_as_tables(tmp_path, graph, capsys):
    """What ``python -m tesched.bench --json`` writes today is what the figures page can render."""
    from tesched.bench import main
    out = tmp_path / "bench.json"
    main((["--graph", "--only", "rnn"] if graph else ["--only", "gemm", "--no-peak", "--no-build"]) +
         ["--quick", "--repeat", "1", "--no-torch", "--json", str(out)])
    capsys.readouterr()
    document = json.loads(out.read_text())
    assert document["command"].endswith(f"--json {out}") and document["date"].endswith("UTC")
    tables = bench_tables.tables(document)
    assert [row[0] for row in tables[0].rows] == [bench_tables.escape(w["name"]) for w in document["workloads"]]
    assert all(len(row) == len(table.header) for table in tables for row in table.rows)
    assert "``python -m tesched.bench" in bench_tables.caption(document)


def test_every_package_that_declares_a_public_api_is_documented():
    """A package with ``__all__`` in its ``__init__.py`` is public: it needs a page and a line in
    ``tests/public_api.py`` (or it must stop declaring ``__all__``)."""
    from tests.public_api import PUBLIC_MODULES
    root = Path(__file__).resolve().parent.parent
    declared = {".".join(p.parent.relative_to(root).parts) for p in (root / "tesched").rglob("__init__.py")
                if "\n__all__" in "\n" + p.read_text()}
    assert declared <= set(PUBLIC_MODULES), sorted(declared - set(PUBLIC_MODULES))
    pages = "".join(p.read_text() for p in (DOCS / "api").glob("*.rst"))
    assert all(f"automodule:: {m}\n" in pages for m in PUBLIC_MODULES)
