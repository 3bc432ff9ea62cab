"""Every subpackage is listed in pyproject.toml, so a regular (non-editable) install ships it."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_subpackage_is_packaged():
    text = (ROOT / "pyproject.toml").read_text()
    block = re.search(r"^packages = \[(.*?)\]", text, re.S | re.M).group(1)
    listed = set(re.findall(r'"(tesched[\w.]*)"', block))
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "tesched").rglob("__init__.py")}
    assert found <= listed, f"missing from pyproject.toml: {sorted(found - listed)}"
    assert "tesched.runtime" in listed and (ROOT / "runtime" / "tesched_runtime.h").exists()
