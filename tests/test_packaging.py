"""A regular (non-editable) install ships every module and the runtime header."""
from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parent.parent


def test_every_module_directory_is_a_package():
    """``packages.find`` only finds directories with an ``__init__.py``; a module elsewhere would be lost."""
    found = set(find_packages(str(ROOT), include=["tesched*"]))
    dirs = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "tesched").rglob("*.py")
            if "__pycache__" not in p.parts}
    assert dirs <= found, f"directories with modules but no __init__.py: {sorted(dirs - found)}"


def test_runtime_header_is_package_data():
    text = (ROOT / "pyproject.toml").read_text()
    assert "runtime/*.h" in text and "tools/bench/*.c" in text
    assert (ROOT / "tesched" / "runtime" / "tesched_runtime.h").exists()


def test_page_assets_are_package_data():
    text = (ROOT / "pyproject.toml").read_text()
    assert "viz/assets/*.css" in text and "viz/assets/*.js" in text
    assert {p.name for p in (ROOT / "tesched" / "viz" / "assets").iterdir()} == {"page.css", "page.js"}
