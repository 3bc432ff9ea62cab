"""Tests of tesched.graph.load: an exported graph loaded back without a compiler computes what the
executable it came from computes, checks its inputs the same way, finds its constants file beside it,
and refuses libraries that are not exported graphs."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tesched as ts
from tesched import graph as G
from tesched.graph import load as graph_load
from tesched.target import current_target

from c_programs import conv_relu_kernel
from .helpers import wee_net_reference


@pytest.mark.parametrize("constants", ["embed", "file"])
def test_loaded_graph_computes_as_the_executable(wee, wee_data, tmp_path, constants):
    exe, params = wee
    path = exe.export_library(tmp_path / "wee.so", constants=constants)
    m = G.load_executable(path)
    np.testing.assert_allclose(m(wee_data), wee_net_reference(wee_data, params), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(m(data=wee_data), exe(wee_data), rtol=1e-6, atol=1e-6)
    assert [v.name for v in m.inputs] == ["data"] and m.output_types == [G.TensorType((1, 5))]
    assert m.build_record.kind == "graph" and m.build_record.contents["constants"]["file"] == (
        "wee.constants" if constants == "file" else None)
    target = current_target().name                    # the default: the host, or TESCHED_TARGET
    assert repr(m) == f"LoadedExecutable(wee.so: data -> 1 output(s), target {target}, {len(exe.kernels)} kernels)"


def test_without_the_call_helper_calls_go_through_cffi(wee, wee_data, tmp_path, monkeypatch):
    monkeypatch.setattr(graph_load, "helper_available", lambda: False)       # as in a process without cc
    exe, params = wee
    m = G.load_executable(exe.export_library(tmp_path / "wee.so"))
    np.testing.assert_allclose(m(wee_data), wee_net_reference(wee_data, params), rtol=1e-4, atol=1e-4)
    with pytest.raises(TypeError, match="input data: expected dtype float32, got float64"):
        m(wee_data.astype(np.float64))


@pytest.mark.parametrize("call, error, message", [
    (lambda m, x: m(x.astype(np.float64)), TypeError, "input data: expected dtype float32, got float64"),
    (lambda m, x: m(x[:, :2]), ValueError, r"input data: expected shape \(1, 3, 8, 8\), got \(1, 2, 8, 8\)"),
    (lambda m, x: m(), TypeError, "missing inputs: data"),
    (lambda m, x: m(x, data=x), TypeError, "input 'data' given twice"),
    (lambda m, x: m(image=x), TypeError, "unknown input 'image'"),
])
def test_loaded_graph_checks_inputs_as_the_executable(wee, wee_data, tmp_path, call, error, message):
    exe, _ = wee
    m = G.load_executable(exe.export_library(tmp_path / "wee.so"))
    for run in (exe, m):
        with pytest.raises(error, match=message):
            call(run, wee_data)


def test_a_fresh_process_without_a_compiler_loads_and_runs_it(wee, wee_data, tmp_path):
    exe, params = wee
    path = exe.export_library(tmp_path / "wee.so", constants="file")
    np.save(tmp_path / "x.npy", wee_data)
    (tmp_path / "bin").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("CC", "PATH")}
    env.update(PATH=str(tmp_path / "bin"), TESCHED_CACHE_DIR=str(tmp_path / "cache"))
    code = textwrap.dedent(f"""
        import shutil, numpy as np
        from tesched import graph as G
        assert shutil.which("gcc") is None
        m = G.load_executable({str(path)!r})
        np.save({str(tmp_path / 'y.npy')!r}, m(np.load({str(tmp_path / 'x.npy')!r})))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                          cwd=os.getcwd())
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), wee_net_reference(wee_data, params), rtol=1e-4, atol=1e-4)


def test_a_missing_constants_file_is_refused(wee, tmp_path):
    exe, _ = wee
    path = exe.export_library(tmp_path / "wee.so", constants="file")
    (tmp_path / "wee.constants").unlink()
    with pytest.raises(ts.ModuleLoadError, match="wee: cannot open the constants file .*wee.constants"):
        G.load_executable(path)


def test_kernels_and_graphs_are_loaded_by_their_own_loader(wee, tmp_path):
    graph = wee[0].export_library(tmp_path / "wee.so")
    kernel = conv_relu_kernel().export_library(tmp_path / "conv_relu.so")
    with pytest.raises(ts.ModuleLoadError, match=r"holds a kernel \(conv_relu\), not a graph: load it with "
                                                 r"tesched.load_module"):
        G.load_executable(kernel)
    with pytest.raises(ts.ModuleLoadError, match=r"holds a graph \(wee\), not a kernel: load it with "
                                                 r"tesched.graph.load_executable"):
        ts.load_module(graph)
