"""Tests of tesched.driver.load: an exported kernel loaded back as a Kernel (in this process, and in a fresh
one without a compiler on PATH) computes what NumPy computes and checks its arguments as the kernel it
was exported from; a library that needs a CPU feature this machine lacks, or follows another module ABI,
or is not a tesched kernel, is refused with ModuleLoadError before it runs."""
import os
import subprocess
import sys
import textwrap

import _cffi_backend
import numpy as np
import pytest

import tesched as ts
from tesched.driver import kernel as kernel_module
from tesched.driver import manifest
from tesched.tools.demo import conv_relu_reference

from c_programs import SIZES, conv_relu_kernel, outer_sum_kernel

DATA = (SIZES.batch, SIZES.channels, SIZES.height, SIZES.width)
WEIGHT = (SIZES.channels, SIZES.channels, 3, 3)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(kernel, path of its exported shared object)."""
    f = conv_relu_kernel()
    return f, f.export_library(tmp_path_factory.mktemp("load") / "conv_relu.so")


@pytest.fixture
def arrays():
    rng = np.random.default_rng(5)
    return rng.standard_normal(DATA, dtype=np.float32), rng.standard_normal(WEIGHT, dtype=np.float32)


def test_loaded_kernel_computes_as_numpy(exported, arrays):
    f, path = exported
    g = ts.load_module(path)
    assert repr(g) == "Kernel('conv_relu', args=[data, weight, relu])" and g.lowered is None
    np.testing.assert_allclose(g(*arrays), conv_relu_reference(*arrays), rtol=1e-4, atol=1e-4)
    out = np.empty(DATA, np.float32)
    assert g(*arrays, out) is None
    np.testing.assert_array_equal(out, f(*arrays))
    assert g.c_source.startswith('#include "tesched_runtime.h"')
    run = g.prepare(*arrays)
    np.testing.assert_allclose(run(), conv_relu_reference(*arrays), rtol=1e-4, atol=1e-4)


def test_without_the_call_helper_calls_go_through_cffi(exported, arrays, monkeypatch):
    monkeypatch.setattr(kernel_module, "helper_available", lambda: False)     # as in a process without cc
    g = ts.load_module(exported[1])
    assert g._program is None
    expected = conv_relu_reference(*arrays)
    np.testing.assert_allclose(g(*arrays), expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(g.prepare(*arrays)(), expected, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="argument relu: output overlaps argument data in memory"):
        g(arrays[0], arrays[1], arrays[0])


def test_loaded_kernel_records_what_it_was_built_for(exported):
    record = ts.load_module(exported[1]).build_record
    assert record.tesched_version == ts.__version__ and record.abi == manifest.EXPORT_ABI
    assert record.kind == "kernel" and record.entry == "conv_relu" and record.target == "host"
    assert set(record.features) == set(ts.Target().isa_features)
    assert "-march=native" in record.flags and record.compiler.startswith(ts.Target().compiler[0])
    assert len(record.content_sha256) == 64


@pytest.mark.parametrize("mistake, error, message", [
    (lambda a, w: (a.astype(np.float64), w), TypeError, "argument data: expected dtype float32, got float64"),
    (lambda a, w: (a, w[:2]), ValueError, r"argument weight: expected shape \(3, 3, 3, 3\), got \(2, 3, 3, 3\)"),
    (lambda a, w: (a[..., ::-1], w), ValueError, "argument data: array is not C-contiguous"),
    (lambda a, w: (a, w, a), ValueError, "argument relu: output overlaps argument data in memory"),
    (lambda a, w: (a, w.tolist()), TypeError, "argument weight: expected an array .*got list"),
    (lambda a, w: (a,), TypeError, r"conv_relu takes 3 arrays \(data, weight, relu\) or its 2 inputs, got 1"),
])
def test_loaded_kernel_checks_arguments_as_the_built_one(exported, arrays, mistake, error, message):
    f, path = exported
    g = ts.load_module(path)
    for kernel in (f, g):
        with pytest.raises(error, match=message):
            kernel(*mistake(*arrays))


def test_symbolic_sizes_and_allocation_failures_after_loading(tmp_path, run_python):
    path = outer_sum_kernel().export_library(tmp_path / "outer_sum.so")
    done = run_python(f"""
        import numpy as np, tesched as ts
        f = ts.load_module({str(path)!r})
        v = np.arange(1, 6, dtype=np.float32)
        np.testing.assert_allclose(f(v), v * v.sum(), rtol=1e-6)
        try:
            f(np.ones(600_000, np.float32))
        except MemoryError as err:
            print("MemoryError:", err)
        try:
            f(np.ones(3, np.float32), np.empty(4, np.float32))
        except ValueError as err:
            print("ValueError:", err)
    """)
    assert done.returncode == 0, done.stderr
    assert "MemoryError: outer_sum: cannot allocate buffer outer of 1440000000000 bytes (float32[600000, 600000])" \
        in done.stdout
    assert "ValueError: argument R: dimension 0 is 4, but size n is 3 from an earlier argument" in done.stdout


def test_a_fresh_process_without_a_compiler_loads_and_runs_it(exported, arrays, tmp_path):
    path = exported[1]
    np.save(tmp_path / "data.npy", arrays[0])
    np.save(tmp_path / "weight.npy", arrays[1])
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("CC", "PATH")}
    env.update(PATH=str(empty), TESCHED_CACHE_DIR=str(tmp_path / "cache"))
    code = textwrap.dedent(f"""
        import shutil, numpy as np, tesched as ts
        assert shutil.which("gcc") is None and shutil.which("cc") is None
        f = ts.load_module({str(path)!r})
        out = f(np.load({str(tmp_path / 'data.npy')!r}), np.load({str(tmp_path / 'weight.npy')!r}))
        np.save({str(tmp_path / 'out.npy')!r}, out)
        print("loaded", f.build_record.target)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                          cwd=os.getcwd())
    assert done.returncode == 0, done.stderr
    assert "loaded host" in done.stdout
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), conv_relu_reference(*arrays), rtol=1e-4, atol=1e-4)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").glob("_tesched_*"))


def test_a_host_lacking_a_recorded_feature_is_refused_before_loading(tmp_path, monkeypatch):
    path = conv_relu_kernel().export_library(tmp_path / "avx2.so", target="x86-64-avx2")
    monkeypatch.setattr(manifest, "host_features", lambda: frozenset({"sse4_2", "avx", "fma", "f16c"}))
    with pytest.raises(ts.ModuleLoadError, match=r"avx2.so: kernel conv_relu was compiled for target x86-64-avx2, "
                                                 r"which uses avx2; this CPU lacks it"):
        ts.load_module(path)


def test_another_module_abi_is_refused(exported, monkeypatch):
    monkeypatch.setattr(manifest, "EXPORT_ABI", manifest.EXPORT_ABI + 1)
    with pytest.raises(ts.ModuleLoadError, match=rf"exported by tesched {ts.__version__} with module ABI "
                                                 rf"{manifest.EXPORT_ABI - 1}; this tesched .* loads module ABI "
                                                 rf"{manifest.EXPORT_ABI}: export it again"):
        ts.load_module(exported[1])


def test_files_that_are_not_exported_kernels_are_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="no exported tesched library"):
        ts.load_module(tmp_path / "missing.so")
    (tmp_path / "text.so").write_text("hello")
    with pytest.raises(ts.ModuleLoadError, match="not an ELF shared library"):
        ts.load_module(tmp_path / "text.so")
    with pytest.raises(ts.ModuleLoadError, match="not a library exported by tesched"):
        ts.load_module(_cffi_backend.__file__)           # a shared library, but no build record


def test_a_loaded_kernel_cannot_be_exported_again(exported, tmp_path):
    with pytest.raises(TypeError, match="loaded from an exported library"):
        ts.load_module(exported[1]).export_library(tmp_path / "again.so")


def test_a_loaded_gather_raises_bounds_error_with_the_message_of_the_built_one(tmp_path):
    A = ts.placeholder((10,), name="A")
    I = ts.placeholder((4,), "int32", name="I")
    G = ts.compute((4,), lambda i: A[I[i]] + 1.0, name="G")
    f = ts.build(ts.create_schedule(G.op), [A, I, G], name="gather_export")
    g = ts.load_module(f.export_library(tmp_path / "gather_export.so"))
    a, good, bad = np.arange(10, dtype=np.float32), np.array([9, 0, 3, 3], np.int32), np.array([9, 10, 3, 3], np.int32)
    np.testing.assert_array_equal(g(a, good), a[good] + 1)
    for kernel in (f, g):
        with pytest.raises(ts.BoundsError, match=r"gather_export: A is accessed out of bounds by stage G: A\[I\[i\]\] "
                                                 r"reads dimension 0 at a data-dependent index outside \[0, 10\)"):
            kernel(a, bad)
    assert "TESCHED_ERROR_INDEX" in (tmp_path / "gather_export.h").read_text()
