"""The command line ``python -m tesched``: ``--version``, plain-text ``--help``, and errors for typos."""
import subprocess
import sys
from pathlib import Path

import pytest

import tesched as ts
from tesched.__main__ import build_parser, main

ROOT = Path(__file__).resolve().parent.parent


def test_version_is_printed(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"tesched {ts.__version__}"


def test_help_is_plain_text_naming_every_command():
    text = build_parser().format_help()
    for command in ("demo", "show", "cache", "--version", "python -m tesched.bench"):
        assert command in text
    assert "``" not in text and ":mod:" not in text      # no reST markup


def test_an_unknown_command_is_an_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["dmeo"])
    assert exit_info.value.code == 2 and "invalid choice: 'dmeo'" in capsys.readouterr().err


def test_module_entry_point_runs():
    done = subprocess.run([sys.executable, "-m", "tesched", "--version"], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("tesched ")
