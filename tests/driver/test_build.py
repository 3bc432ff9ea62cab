"""Tests of tesched.driver.build: building kernels, the disk cache (reused in-process and by fresh processes,
without calling the compiler) and concurrent builds of one kernel by two processes.

Every test here runs with ``TESCHED_CACHE_DIR`` pointing at a cache private to the test session, and
builds kernels with names unique to the test, so "compiled or not" does not depend on earlier runs.
"""
import os
import shutil
import subprocess
import sys
import time
import uuid

import numpy as np
import pytest

import tesched as ts
from tesched.codegen.c import CSource, generate_c
from tesched.driver import build as builder
from tesched.driver.cache import cache_dir

pytestmark = pytest.mark.usefixtures("isolated_cache")

# Builds one kernel (named by KERNEL_NAME), checks it against NumPy and prints whether it was compiled.
KERNEL_SCRIPT = """
import os, time
import numpy as np
import tesched as ts

A = ts.placeholder((6, 5), name="A")
B = ts.compute((6, 5), lambda i, j: A[i, j] * 3.0 - A[i, 4 - j], name="B")
s = ts.create_schedule(B.op)
s[B].parallel(B.op.axis[0])
start_at = float(os.environ.get("START_AT", "0"))
while time.time() < start_at:      # lets two processes reach the build at the same moment
    time.sleep(0.001)
f = ts.build(s, [A, B], name=os.environ["KERNEL_NAME"])
a = np.arange(30, dtype=np.float32).reshape(6, 5)
np.testing.assert_allclose(f(a), a * 3 - a[:, ::-1])
print("compiled" if f.compiled else "cached")
"""


def unique_name() -> str:
    return f"kernel_{uuid.uuid4().hex[:12]}"


def build_in_process(name: str, monkeypatch: pytest.MonkeyPatch):
    """Run KERNEL_SCRIPT in this process; returns its kernel."""
    monkeypatch.setenv("KERNEL_NAME", name)
    namespace: dict = {}
    exec(compile(KERNEL_SCRIPT, "<kernel script>", "exec"), namespace)
    return namespace["f"]


def cached_modules(cache, name_fragment: str = "") -> list:
    return [p for p in cache.iterdir() if p.suffix == ".so" and name_fragment in p.name]


def test_second_build_does_not_call_the_compiler(isolated_cache, capsys, monkeypatch):
    name = unique_name()
    first = build_in_process(name, monkeypatch)
    second = build_in_process(name, monkeypatch)
    assert first.compiled and not second.compiled
    assert capsys.readouterr().out.split() == ["compiled", "cached"]
    key = first.cache_key
    assert len(cached_modules(isolated_cache, key[:24])) == 1
    assert not [p for p in isolated_cache.iterdir() if p.name.startswith("build-")]   # no leftovers


def test_fresh_process_reuses_the_disk_cache(isolated_cache, run_python, monkeypatch):
    name = unique_name()
    assert build_in_process(name, monkeypatch).compiled
    result = run_python(KERNEL_SCRIPT, env={"TESCHED_CACHE_DIR": str(isolated_cache), "KERNEL_NAME": name})
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["cached"]


def test_two_processes_build_the_same_kernel_at_once(isolated_cache, monkeypatch):
    name = unique_name()
    env = dict(os.environ, TESCHED_CACHE_DIR=str(isolated_cache), KERNEL_NAME=name,
               START_AT=str(time.time() + 4))
    procs = [subprocess.Popen([sys.executable, "-c", KERNEL_SCRIPT], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err[-2000:]
        assert out.split() in (["compiled"], ["cached"])
    assert not [p for p in isolated_cache.iterdir() if p.name.startswith("build-")]
    assert not build_in_process(name, monkeypatch).compiled


def test_cache_key_depends_on_the_source():
    A = ts.placeholder((4,), name="A")
    plus = ts.compute((4,), lambda i: A[i] + 1.0, name="B")
    minus = ts.compute((4,), lambda i: A[i] - 1.0, name="B")
    host = ts.Target()
    key = [builder.cache_key(generate_c(ts.lower(ts.create_schedule(t.op), [A, t]), frozenset(), host), host)
           for t in (plus, minus, plus)]
    assert key[0] != key[1] and key[0] == key[2]


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TESCHED_CACHE_DIR", str(tmp_path / "explicit"))
    assert cache_dir() == tmp_path / "explicit" and (tmp_path / "explicit").is_dir()
    monkeypatch.delenv("TESCHED_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "tesched"


def test_compiler_errors_raise_build_error():
    bad = CSource("broken", "void broken(float *x) { x[0] = ; }", "void broken(float *);")
    with pytest.raises(ts.BuildError, match="C compilation of broken failed"):
        builder.compile_c(bad, ts.Target())


def test_build_from_a_lowered_function(rand):
    A = ts.placeholder((5,), name="A")
    B = ts.compute((5,), lambda i: A[i] * A[i], name="B")
    lowered = ts.lower(ts.create_schedule(B.op), [A, B], name=unique_name())
    f = ts.build(lowered)
    a = rand(5)
    np.testing.assert_allclose(f(a), a * a)


def test_build_arguments_are_checked():
    A = ts.placeholder((5,), name="A")
    B = ts.compute((5,), lambda i: A[i] * 2.0, name="B")
    s = ts.create_schedule(B.op)
    with pytest.raises(ValueError, match="unknown target 'rocm'"):
        ts.build(s, [A, B], target="rocm")
    with pytest.raises(ValueError, match="loop i of stage B is left unbound outside the GPU kernel"):
        ts.build(s, [A, B], target="cuda")
    with pytest.raises(TypeError, match="args .* are required"):
        ts.build(s)


def test_a_missing_compiler_says_how_to_install_one_or_set_cc(run_python, tmp_path):
    result = run_python("""
        import tesched as ts
        A = ts.placeholder((4,), name="A")
        B = ts.compute((4,), lambda i: A[i] + 1.0, name="B")
        try:
            ts.build(ts.create_schedule(B.op), [A, B])
        except ts.BuildError as err:
            print("BuildError:", err)
    """, env={"CC": str(tmp_path / "no-such-cc"), "TESCHED_CACHE_DIR": str(tmp_path / "cache")})
    assert "BuildError: no C compiler found" in result.stdout, result.stdout + result.stderr
    assert "apt-get install gcc" in result.stdout and "CC environment variable" in result.stdout


def test_a_cached_kernel_loads_after_the_compiler_is_gone(run_python, tmp_path):
    """The kernel cache is keyed by the compiler's identity, which is recorded beside it: once the compiler
    has left the machine, kernels already built still load and run; a new one says how to get a compiler."""
    real = shutil.which("gcc") or shutil.which("cc")
    if real is None:
        pytest.skip("no C compiler to build the kernel with")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "tesched-test-cc"
    wrapper.write_text(f'#!/bin/sh\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    env = {"CC": wrapper.name, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "TESCHED_CACHE_DIR": str(tmp_path / "cache")}
    program = """
        import numpy as np
        import tesched as ts
        A = ts.placeholder((4,), name="A")
        B = ts.compute((4,), lambda i: A[i] * 3.0 + 1.0, name="B")
        f = ts.build(ts.create_schedule(B.op), [A, B], name="three_a_plus_one")
        print("compiled" if f.compiled else "cached", f(np.arange(4, dtype=np.float32)).tolist())
        C = ts.compute((4,), lambda i: A[i] - 5.0, name="C")
        try:
            ts.build(ts.create_schedule(C.op), [A, C], name="a_minus_five")
            print("new kernel built")
        except ts.BuildError as err:
            print("BuildError:", err)
    """
    first = run_python(program, env=env)
    assert "compiled [1.0, 4.0, 7.0, 10.0]" in first.stdout and "new kernel built" in first.stdout, first.stderr
    wrapper.unlink()
    second = run_python(program.replace("a_minus_five", "a_minus_five_again").replace("- 5.0", "- 6.0"), env=env)
    assert "cached [1.0, 4.0, 7.0, 10.0]" in second.stdout, second.stdout + second.stderr
    assert "BuildError:" in second.stdout and "apt-get install gcc" in second.stdout, second.stdout
