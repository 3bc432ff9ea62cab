"""The benchmark suite (``python -m tesched.bench``) in quick mode: every workload is built, checked
against NumPy inside the suite, timed, and reported as a table, JSON and a chart. No timing is asserted."""
import json
import shutil

import numpy as np
import pytest

from tesched.bench import main
from tesched.tools.bench import run_suite
from tesched.tools.bench.catalog import workloads
from tesched.tools.bench.peak import measure_peak
from tesched.tools.bench.report import format_table, to_json
from tesched.tools.bench.workloads import Case


@pytest.fixture(scope="module")
def quick_result():
    return run_suite(repeat=1, quick=True, peak=False, build=False)


def test_every_workload_is_checked_timed_and_reported(quick_result):
    assert [row.key for row in quick_result.rows] == [w.key for w in workloads()]
    table = format_table(quick_result)
    for row in quick_result.rows:
        assert {"fused", "numpy"} <= set(row.timings)
        assert all(t.min <= t.median for t in row.timings.values())
        assert row.name in table
    document = json.loads(json.dumps(to_json(quick_result)))
    assert [w["key"] for w in document["workloads"]] == [row.key for row in quick_result.rows]


def test_fused_cells_are_one_kernel_and_unfused_one_per_op(quick_result):
    rows = {row.key: row for row in quick_result.rows}
    for key in ("rnn", "lstm"):
        assert rows[key].kernels["fused"] == 1
        assert rows[key].kernels["unfused"] > rows[key].kernels["graph fused"] == 1
    assert rows["conv1x1"].kernels == {"fused": 1, "unfused": 3}


def test_a_wrong_variant_stops_the_suite():
    ref = np.arange(3.0)
    case = Case("probe", 0.0, [ref], {"right": lambda: ref.astype(np.float32), "wrong": lambda: ref + 1})
    with pytest.raises(AssertionError, match="probe, wrong"):
        case.check()


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no C compiler")
def test_peak_flops_benchmark_runs():
    peaks = measure_peak((1,), quick=True)
    assert peaks is not None and peaks[1].best_gflops >= peaks[1].median_gflops > 0


def test_command_line_writes_table_json_and_chart(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="the chart needs matplotlib (pip install tesched[bench])")
    out_json, out_png = tmp_path / "bench.json", tmp_path / "bench.png"
    main(["--quick", "--repeat", "1", "--only", "gemm", "overhead", "--json", str(out_json), "--plot", str(out_png)])
    printed = capsys.readouterr().out
    assert "GEMM 64x64x64" in printed and "build time" in printed and "peak FP32" in printed
    document = json.loads(out_json.read_text())
    assert [w["key"] for w in document["workloads"]] == ["gemm", "overhead"]
    assert document["gemm_fraction_of_peak"]["median"] > 0
    assert "thread pool" in printed
    assert out_png.read_bytes()[:4] == b"\x89PNG"


def test_the_graph_benchmark_checks_times_and_reports_targets():
    from tesched.tools.bench.graph_suite import format_graph_table, graph_json, run_graph_suite
    result = run_graph_suite(repeat=1, quick=True, only=["rnn", "gemm", "resnet", "overhead"], use_torch=False)
    assert [row.key for row in result.rows] == ["rnn", "gemm", "resnet"]
    rows = {row.key: row for row in result.rows}
    assert rows["rnn"].kernels == 1 and rows["resnet"].kernels == 2
    assert {"graph", "hand"} <= set(rows["gemm"].timings)
    table = format_graph_table(result)
    assert "graph >= 1.50x numpy" in table and "call overhead" in table
    document = json.loads(json.dumps(graph_json(result)))
    assert len(document["call_overhead"]) == 3


def test_a_missing_plotting_library_stops_the_run_before_it_starts(monkeypatch, capsys):
    import tesched.tools.bench.cli as cli
    monkeypatch.setattr(cli, "optional_module", lambda name: None)
    started = []
    monkeypatch.setattr(cli, "run_suite", lambda **kw: started.append(kw))
    with pytest.raises(SystemExit) as exit_info:
        main(["--quick", "--plot", "chart.png"])
    assert exit_info.value.code == 2 and not started
    assert "--plot needs matplotlib" in capsys.readouterr().err


def test_missing_optional_packages_are_named_before_the_run(monkeypatch):
    import tesched.tools.bench.cli as cli
    monkeypatch.setattr(cli, "optional_module", lambda name: None)
    notes = cli.missing_dependencies(cli.parse_args(["--quick"]))
    assert any("PyTorch" in n for n in notes) and any("threadpoolctl" in n for n in notes)
    assert not any("PyTorch" in n for n in cli.missing_dependencies(cli.parse_args(["--quick", "--no-torch"])))


def test_blas_threads_are_set_and_reported_through_threadpoolctl():
    pytest.importorskip("threadpoolctl", reason="pip install tesched[bench]")
    from tesched.tools.bench.threads import describe_thread_pools, set_blas_threads, thread_pools
    np.ones((64, 64)) @ np.ones((64, 64))        # NumPy's BLAS is loaded
    if not set_blas_threads(1):
        pytest.skip("threadpoolctl finds no BLAS library in this NumPy")
    pools = [p for p in thread_pools() if p["user_api"] == "blas"]
    assert pools and all(p["num_threads"] == 1 for p in pools)
    assert "blas" in describe_thread_pools(pools)


def test_peers_are_held_to_a_narrower_target_only():
    from tesched.tools.bench.peers import RESTRICTED, child_environment, peer_environment
    import tesched as ts
    avx2, avx512 = ts.Target("x86-64-avx2"), ts.Target("x86-64-avx512")
    env = peer_environment(avx2, host=avx512)
    assert env["OPENBLAS_CORETYPE"] == "Haswell" and env["ATEN_CPU_CAPABILITY"] == "avx2"
    assert env["ONEDNN_MAX_CPU_ISA"] == "AVX2" and env["MKL_ENABLE_INSTRUCTIONS"] == "AVX2"
    assert not any(f in env.get("NPY_DISABLE_CPU_FEATURES", "").split() for f in ("AVX2", "X86_V3", "FMA3"))
    assert peer_environment(ts.Target("x86-64"), host=avx2)["OPENBLAS_CORETYPE"] == "Nehalem"
    assert peer_environment(avx512, host=avx512) == {} and peer_environment(avx2, host=avx2) == {}
    assert child_environment(avx2, {RESTRICTED: "1"}) is None            # the child does not re-run itself


def test_the_command_line_builds_for_the_target_and_says_what_the_peers_use(monkeypatch, capsys):
    from tesched.tools.bench.peers import RESTRICTED
    monkeypatch.setenv(RESTRICTED, "1")                                   # report in this process
    main(["--graph", "--quick", "--repeat", "1", "--only", "gemm", "--no-torch", "--target", "x86-64-avx2"])
    printed = capsys.readouterr().out
    assert "tesched target: x86-64-avx2" in printed and "graph >= 0.95x numpy" in printed
    with pytest.raises(SystemExit) as exit_info:
        main(["--graph", "--target", "nosuch"])
    assert exit_info.value.code == 2 and "--target" in capsys.readouterr().err
