"""Each tutorial runs to the end in quick mode (small sizes) as a separate process. The tutorials check
every kernel they build against NumPy themselves, so exit status 0 means every step was correct."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

TUTORIALS = sorted((Path(__file__).resolve().parent.parent / "tutorials").glob("[0-9][0-9]_*.py"))


def test_tutorials_are_found():
    assert [p.name for p in TUTORIALS][:2] == ["01_schedule_basics.py", "02_fuse_conv_relu.py"]


@pytest.mark.parametrize("tutorial", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_runs_in_quick_mode(tutorial):
    env = dict(os.environ, TESCHED_QUICK="1")
    done = subprocess.run([sys.executable, str(tutorial), "--quick"], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tutorial.parent)
    assert done.returncode == 0, f"{tutorial.name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    steps = done.stdout.count("\n=== ")
    assert steps >= 5
    assert done.stdout.count("-> matches NumPy") >= steps - 1  # every step but the closing summary
