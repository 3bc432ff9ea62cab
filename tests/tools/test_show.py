"""``python -m tesched show script.py`` (tesched/tools/show.py): the page of the script's last kernel."""
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.viz.page_parser import Page

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
import numpy as np
import tesched as ts
A = ts.placeholder((8,), name="A")
first = ts.compute((8,), lambda i: A[i] + 1.0, name="first")
s = ts.create_schedule(first.op)
ts.build(s, [A, first], name="first_kernel")
last = ts.compute((8,), lambda i: A[i] * 3.0, name="last")
s = ts.create_schedule(last.op)
io, ii = s[last].split(s[last].op.axis[0], factor=4)
f = ts.build(s, [A, last], name="last_kernel")
a = np.arange(8, dtype=np.float32)
np.testing.assert_allclose(f(a), a * 3)
print("args", sys.argv[1:])
"""


def run_show(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tesched", "show", *args], cwd=ROOT, capture_output=True, check=False,
                          text=True, timeout=300)


def test_show_writes_the_page_of_the_last_kernel(tmp_path):
    script = tmp_path / "pipeline.py"
    script.write_text(textwrap.dedent(SCRIPT))
    out = tmp_path / "page.html"
    done = run_show("-o", str(out), str(script), "--quick")
    assert done.returncode == 0, done.stderr
    assert "args ['--quick']" in done.stdout and f"wrote {out}" in done.stdout
    page = Page(out)
    assert {loop["data-stage"] for loop in page.loops} == {"last"}
    assert any(line.startswith("int last_kernel(") for line in page.c_lines)


def test_show_explains_a_script_without_kernels(tmp_path):
    script = tmp_path / "empty.py"
    script.write_text("x = 1\n")
    done = run_show(str(script))
    assert done.returncode == 2 and "lowered and built no kernel" in done.stderr
    missing = run_show(str(tmp_path / "nope.py"))
    assert missing.returncode == 2 and "no script" in missing.stderr
