"""The compiler driver's precompiled runtime header: made once per compiler and flags, used by gcc for
every kernel of those flags (not silently rejected), and never a change in what a kernel computes."""
from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import cffi
import numpy as np
import pytest

import tesched as ts
from tesched.driver import cache, compiler

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="no C compiler")

TARGETS = ["host", "x86-64-avx512", "x86-64-avx2", "x86-64", "c"]


def _kernel_file(tmp_path: Path) -> Path:
    """A cffi module whose source uses the runtime (as every generated kernel does)."""
    ffi = cffi.FFI()
    ffi.cdef("long f(long a, long b);")
    ffi.set_source("_pch_probe", '#include "tesched_runtime.h"\nlong f(long a, long b) { return ts_floordiv(a, b); }')
    c_file = tmp_path / "_pch_probe.c"
    ffi.emit_c_code(str(c_file))
    return c_file


@pytest.mark.parametrize("name", TARGETS)
def test_gcc_uses_the_precompiled_header_for_each_target(name, tmp_path):
    target = ts.Target(name)
    header = compiler.precompiled_header(target, wait=True)
    assert header is not None and Path(header + ".gch").exists()
    # -H lists every header read; "! name.gch" marks a precompiled header gcc accepted. A .gch made with
    # other flags than the kernel's would be skipped silently and cost the whole parse again.
    command = [*target.compiler, *compiler.KERNEL_FLAGS[1:], *target.flags, "-I", str(compiler.RUNTIME_DIR),
               "-I", sysconfig.get_paths()["include"], "-include", header, "-H", "-fsyntax-only",
               str(_kernel_file(tmp_path))]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"! {header}.gch" in done.stderr, done.stderr[:2000]
    assert "immintrin.h" not in done.stderr or name == "c"


def test_header_is_made_once_per_flags():
    first = compiler.precompiled_header(ts.Target("x86-64-avx2"), wait=True)
    assert first == compiler.precompiled_header(ts.Target("x86-64-avx2"))
    assert first != compiler.precompiled_header(ts.Target("x86-64"), wait=True)


def test_no_header_for_other_compilers_or_a_failed_precompilation(monkeypatch, tmp_path):
    target = ts.Target("host")
    assert compiler._precompiled_header(target, "clang version 17.0.6") is None
    monkeypatch.setenv("TESCHED_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiler, "LINK_FLAGS", ("-fno-such-flag",))
    compiler._header_text.cache_clear()
    try:
        assert compiler._precompiled_header(target, "gcc (Debian 12.2.0) 12.2.0", wait=True) is None
        assert list(tmp_path.glob("pch-*/failed"))    # remembered: not attempted for every kernel
    finally:
        compiler._header_text.cache_clear()


def test_a_cleared_cache_makes_the_header_again(monkeypatch, tmp_path):
    monkeypatch.setenv("TESCHED_CACHE_DIR", str(tmp_path))
    target = ts.Target("x86-64")
    header = compiler.precompiled_header(target, wait=True)
    assert header is not None
    cache.clear()
    assert not Path(header + ".gch").exists()
    assert compiler.precompiled_header(target, wait=True) == header and Path(header + ".gch").exists()


def test_the_first_request_compiles_beside_the_kernel_and_later_ones_use_it(monkeypatch, tmp_path):
    """Without ``wait`` the first kernel does not wait for the precompilation: it gets None while another
    process makes the header, once; the header is there for the kernels after it."""
    monkeypatch.setenv("TESCHED_CACHE_DIR", str(tmp_path))
    target = ts.Target("x86-64-avx2")
    assert compiler.precompiled_header(target) is None
    again = compiler.precompiled_header(target)             # being made (not started twice), or made
    assert again is None or Path(again + ".gch").exists()
    assert len(list(tmp_path.glob("pch-*/building"))) <= 1
    header = compiler.precompiled_header(target, wait=True)   # waits for the one in progress
    assert header is not None and Path(header + ".gch").exists()
    assert not list(tmp_path.glob("pch-*/building")) and compiler.precompiled_header(target) == header


@pytest.mark.parametrize("with_header", [True, False])
def test_kernels_compute_the_same_with_and_without_it(with_header, monkeypatch, tmp_path):
    monkeypatch.setenv("TESCHED_CACHE_DIR", str(tmp_path / ("pch" if with_header else "plain")))
    if not with_header:
        monkeypatch.setattr(compiler, "precompiled_header", lambda target: None)
    n = 37 if with_header else 41     # not one kernel: the process keeps built kernels in memory
    a = ts.placeholder((n,), "int64", name="a")
    b = ts.compute((n,), lambda i: a[i] // 3 + a[i] % -5, name="b")
    c = ts.compute((n,), lambda i: ts.exp(ts.cast("float32", b[i]) / 40), name="c")
    s = ts.create_schedule(c.op)
    s[c].vectorize(c.op.axis[0])
    kernel = ts.build(s, [a, c])
    x = np.arange(-18, n - 18, dtype=np.int64) * 7
    out = np.zeros(n, np.float32)
    kernel(x, out)
    expected = np.exp(((x // 3) + (x % -5)).astype(np.float32) / 40)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert os.listdir(tmp_path)
