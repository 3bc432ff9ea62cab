"""Tests of tesched.tools.cache through ``python -m tesched cache info|verify|clear``."""
import subprocess
import sys

import numpy as np

from tesched.driver import cache


def _cli(action: str, cache_dir) -> str:
    done = subprocess.run([sys.executable, "-m", "tesched", "cache", action], capture_output=True, text=True,
                          env={**__import__("os").environ, "TESCHED_CACHE_DIR": str(cache_dir)}, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_info_verify_and_clear(tmp_path, run_python):
    script = """
        import numpy as np, tesched as ts
        for factor in (2.0, 3.0):
            A = ts.placeholder((4,), name="A"); B = ts.compute((4,), lambda i: A[i] * factor, name="B")
            ts.build(ts.create_schedule(B.op), [A, B], name="cli_entry")(np.ones(4, np.float32))
    """
    assert run_python(script, {"TESCHED_CACHE_DIR": str(tmp_path)}).returncode == 0
    out = _cli("info", tmp_path)
    assert f"cache directory: {tmp_path}" in out and "kernels: 2," in out and "oldest:" in out
    entries = sorted(p for p in tmp_path.glob("_tesched_*.so"))
    entries[0].write_bytes(np.random.default_rng(1).bytes(100))
    out = _cli("verify", tmp_path)
    assert f"removed {entries[0].name}: not an ELF shared object" in out
    assert "verified 2 kernels: 1 good, 1 removed" in out
    assert cache.entry_problem(entries[1]) is None and not entries[0].exists()
    out = _cli("clear", tmp_path)
    assert "removed" in out and not list(tmp_path.glob("_tesched_*"))
    assert "kernels: 0, 0 B" in _cli("info", tmp_path)
