"""Tests of tesched.driver.cache: a damaged entry (empty, truncated, random bytes, a directory, another
kernel's module, no checksum) is rebuilt instead of loaded; leftovers of killed builds are removed; an
unwritable cache directory falls back to a temporary one with one warning; a module that does not load
(a C intrinsic calling an undefined function) raises BuildError naming it and is not cached; gcc's own
diagnostic is part of BuildError. Each damaged-cache case runs in fresh interpreters."""
import os
import time

import numpy as np
import pytest

import tesched as ts
from tesched.driver import cache

KERNEL = """
    import sys, numpy as np, tesched as ts
    A = ts.placeholder((4,), name="A"); B = ts.compute((4,), lambda i: A[i] * float(sys.argv[1]), name="B")
    f = ts.build(ts.create_schedule(B.op), [A, B], name="cached_entry")
    print(f(np.ones(4, np.float32)).tolist(), "compiled" if f.compiled else "cached")
"""


def _run(run_python, tmp_path, factor: float = 2.0):
    code = f"import sys; sys.argv = ['k', '{factor}']\n" + KERNEL.replace("\n    ", "\n")
    return run_python(code, {"TESCHED_CACHE_DIR": str(tmp_path)})


def _damage(entry, kind: str, other) -> None:
    data = entry.read_bytes()
    if kind == "no checksum":
        cache.checksum_path(entry).unlink()
        return
    if kind == "other kernel":
        entry.write_bytes(other.read_bytes())
        cache.checksum_path(entry).write_bytes(cache.checksum_path(other).read_bytes())
        return
    entry.unlink()
    if kind == "directory":
        entry.mkdir()
        return
    entry.write_bytes({"empty": b"", "truncated": data[:len(data) // 2],
                       "random": np.random.default_rng(0).bytes(len(data))}[kind])


@pytest.mark.parametrize("kind", ["empty", "truncated", "random", "directory", "other kernel", "no checksum"])
def test_a_damaged_entry_is_rebuilt(run_python, tmp_path, kind):
    first = _run(run_python, tmp_path, 2.0)
    assert first.returncode == 0 and "compiled" in first.stdout, first.stderr[-2000:]
    (entry,) = [p for p in tmp_path.glob("_tesched_*") if not p.name.endswith(cache.CHECKSUM_SUFFIX)]
    other_run = _run(run_python, tmp_path, 3.0)
    assert other_run.returncode == 0, other_run.stderr[-2000:]
    other = next(p for p in tmp_path.glob("_tesched_*.so") if p != entry)
    _damage(entry, kind, other)
    again = _run(run_python, tmp_path, 2.0)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "[2.0, 2.0, 2.0, 2.0] compiled" in again.stdout
    assert cache.entry_problem(entry) is None
    assert "[2.0, 2.0, 2.0, 2.0] cached" in _run(run_python, tmp_path, 2.0).stdout


def test_stale_build_directories_are_removed(tmp_path, monkeypatch):
    root = tmp_path / "stale"
    stale, fresh = root / "build-old", root / "build-new"
    for d in (stale, fresh):
        d.mkdir(parents=True)
    old = time.time() - 2 * cache.STALE_BUILD_SECONDS
    os.utime(stale, (old, old))
    monkeypatch.setenv("TESCHED_CACHE_DIR", str(root))
    assert cache.cache_dir() == root
    assert not stale.exists() and fresh.exists()   # a build in progress elsewhere is left alone


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_an_unwritable_cache_falls_back_to_a_temporary_one(tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    monkeypatch.setenv("TESCHED_CACHE_DIR", str(locked / "cache"))
    with pytest.warns(RuntimeWarning, match="cannot be written"):
        used = cache.cache_dir()
    assert used != locked / "cache" and used.is_dir()
    assert cache.cache_dir() == used    # warned once


def test_a_missing_parent_that_cannot_be_created_falls_back(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("TESCHED_CACHE_DIR", str(blocker / "cache"))
    with pytest.warns(RuntimeWarning, match="cannot be written"):
        used = cache.cache_dir()
    assert used.is_dir()


def _intrinsic_kernel(source: str, name: str):
    A = ts.placeholder((4,), name="A")
    B = ts.compute((4,), lambda i: A[i] * 2.0, name="B")
    intrin = ts.decl_tensor_intrin(B.op, ts.CIntrinsic(source, body="scale"))
    C = ts.compute((4,), lambda i: A[i] * 2.0, name="C")
    s = ts.create_schedule(C.op)
    s[C].tensorize(C.op.axis[0], intrin)
    return lambda: ts.build(s, [A, C], name=name)


def test_build_error_carries_the_compiler_diagnostic(isolated_cache):
    build = _intrinsic_kernel("void scale(float *a, int sa, float *b, int sb) { undeclared_thing; }",
                              "bad_intrinsic")
    with pytest.raises(ts.BuildError, match="undeclared_thing.{0,3} undeclared"):
        build()


def test_an_intrinsic_calling_an_undefined_function_fails_at_build_and_is_not_cached(isolated_cache):
    source = "void helper_nowhere(float *); void scale(float *a, int sa, float *b, int sb) { helper_nowhere(a); }"
    build = _intrinsic_kernel(source, "undefined_helper")
    before = set(isolated_cache.iterdir())
    for _ in range(2):     # the second attempt fails the same way: nothing broken was cached
        with pytest.raises(ts.BuildError, match="undefined_helper cannot be loaded.*helper_nowhere"):
            build()
    assert {p for p in isolated_cache.iterdir() if p.name.startswith("_tesched_")} == \
        {p for p in before if p.name.startswith("_tesched_")}
