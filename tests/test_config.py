"""tesched.config: every environment variable is read there, documented in the README, and validated."""
import ast
from pathlib import Path

import pytest

from tesched import config
from tesched.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent


def test_every_variable_is_in_the_readme_table():
    readme = (ROOT / "README.md").read_text()
    for v in config.VARIABLES:
        assert f"| `{v.name}` |" in readme, f"{v.name} is missing from the README's table"


def _reads_environment(tree: ast.AST) -> list[int]:
    """Lines that read os.environ / os.getenv (writes, e.g. for a child process, are allowed)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            f = node.func
            if f.attr == "getenv" or (f.attr == "get" and isinstance(f.value, ast.Attribute) and f.value.attr == "environ"):
                lines.append(node.lineno)
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and \
                isinstance(node.value, ast.Attribute) and node.value.attr == "environ":
            lines.append(node.lineno)
    return lines


def test_no_other_module_reads_the_environment():
    offenders = []
    for path in (ROOT / "tesched").rglob("*.py"):
        if path.name == "config.py" and path.parent.name == "tesched":
            continue
        offenders += [f"{path.relative_to(ROOT)}:{line}" for line in _reads_environment(ast.parse(path.read_text()))]
    assert not offenders, f"read the environment through tesched.config instead: {offenders}"


@pytest.mark.parametrize("name, value, message", [
    ("TESCHED_VECTOR_BYTES", "wide", "TESCHED_VECTOR_BYTES='wide' is not an integer"),
    ("TESCHED_VECTOR_BYTES", "48", "must be one of 16, 32, 64"),
    ("TESCHED_NUM_THREADS", "0", "TESCHED_NUM_THREADS='0' must be a positive integer"),
])
def test_malformed_variables_are_named(monkeypatch, name, value, message):
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=message):
        config.settings()


def test_settings_follow_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TESCHED_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TESCHED_DEBUG", "1")
    monkeypatch.setenv("CC", "gcc -Wall")
    s = config.settings()
    assert s.cache_dir == tmp_path and s.debug and s.compiler == ("gcc", "-Wall")
