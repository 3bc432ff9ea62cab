"""Each tutorial runs to the end in quick mode (small sizes) as a separate process, importing this
checkout's tesched. The tutorials check every kernel they build against NumPy (or PyTorch, for the
imported models) themselves, so exit status 0 means every step was correct."""
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py"))
NEEDS_TORCH = {"08_import_pytorch", "12_import_transformer"}


def test_tutorials_are_found():
    assert [p.name for p in TUTORIALS][:2] == ["01_schedule_basics.py", "02_fuse_conv_relu.py"]


@pytest.mark.slow
@pytest.mark.parametrize("tutorial", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_runs_in_quick_mode(tutorial):
    if tutorial.stem in NEEDS_TORCH and importlib.util.find_spec("torch") is None:
        pytest.skip("PyTorch is not installed (pip install tesched[torch])")
    path = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    env = dict(os.environ, TESCHED_QUICK="1", PYTHONPATH=path)
    done = subprocess.run([sys.executable, str(tutorial), "--quick"], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tutorial.parent)
    assert done.returncode == 0, f"{tutorial.name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    steps = done.stdout.count("\n=== ")
    assert steps >= 5
    checks = len(re.findall(r"-> matches (NumPy|PyTorch)", done.stdout))
    assert checks >= steps - 1  # every step but the closing summary


@pytest.mark.parametrize("tutorial", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_command_line_has_help_and_rejects_typos(tutorial):
    if tutorial.stem in NEEDS_TORCH and importlib.util.find_spec("torch") is None:
        pytest.skip("PyTorch is not installed (pip install tesched[torch])")
    path = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    env = dict(os.environ, PYTHONPATH=path)
    env.pop("TESCHED_QUICK", None)
    shown = subprocess.run([sys.executable, str(tutorial), "--help"], capture_output=True, text=True, timeout=300,
                           env=env, cwd=tutorial.parent)
    assert shown.returncode == 0 and "--quick" in shown.stdout and "===" not in shown.stdout, shown.stdout
    typo = subprocess.run([sys.executable, str(tutorial), "--quik"], capture_output=True, text=True, timeout=300,
                          env=env, cwd=tutorial.parent)
    assert typo.returncode == 2 and "unrecognized arguments: --quik" in typo.stderr
    assert "matches" not in typo.stdout        # nothing ran


@pytest.mark.parametrize("tutorial", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_title_is_underlined_to_its_length(tutorial):
    """sphinx-gallery renders the docstring's first line as the page title: a shorter underline is a
    warning, and the documentation is built with warnings as errors."""
    title, underline = tutorial.read_text().split("\n")[:2]
    title = title.removeprefix('"""')
    assert set(underline) == {"="} and len(underline) >= len(title), (title, underline)
