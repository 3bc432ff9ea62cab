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


def test_the_wheel_ships_the_runtime_header_and_the_c_files(tmp_path):
    """Build the wheel as a release would (``pip wheel --no-deps``) and look inside: every module, the
    runtime header kernels include, the benchmark's C file and the page assets must be there."""
    import shutil
    import subprocess
    import sys
    import zipfile
    source = tmp_path / "source"          # a clean copy: no build/ directory left by an earlier build
    shutil.copytree(ROOT / "tesched", source / "tesched", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path), str(source)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    wheels = list(tmp_path.glob("tesched-*.whl"))
    assert len(wheels) == 1, wheels
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    data_files = [p for p in (ROOT / "tesched").rglob("*") if p.suffix in (".h", ".c", ".css", ".js")]
    expected = {p.relative_to(ROOT).as_posix() for p in data_files}
    expected |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "tesched").rglob("*.py") if "__pycache__" not in p.parts}
    assert {"tesched/runtime/tesched_runtime.h", "tesched/tools/bench/peak_flops.c"} <= expected
    assert not expected - names, f"missing from the wheel: {sorted(expected - names)}"
    assert not any(n.startswith(("tests/", "docs/", "tutorials/", "benchmarks/")) for n in names)
