"""Kernel pages (tesched/viz/kernel_page.py, c_lines.py, ir_html.py): every loop maps to its C lines, carries
its kind and the primitive that made it; profiled kernels show stage times; tiles are drawn."""
import numpy as np
import pytest

import tesched as ts
from tests.viz.helpers import ROWS, N, stencil
from tests.viz.page_parser import Page


@pytest.fixture(scope="module")
def kernel():
    s, args, reference = stencil()
    f = ts.build(s, args, name="blur", profile=True)
    a = np.random.default_rng(0).random((N, N), dtype=np.float32)
    np.testing.assert_allclose(f(a), reference(a), rtol=1e-6)
    f.profile(a, repeat=3)
    return f


def test_every_loop_points_at_its_own_c_lines(kernel, tmp_path):
    page = Page(kernel.to_html(tmp_path / "k.html"))
    assert "".join(page.c_lines).replace(" ", "") == kernel.c_source.replace("\n", "").replace(" ", "")
    by_name = {loop["data-name"]: loop for loop in page.loops}
    assert set(by_name) == {"i.outer", "i", "j", "i.inner", "j#2"}
    for name in ("i.outer", "i", "j", "i.inner"):
        lines = page.lines_of(by_name[name])
        c_name = name.replace(".", "_")
        assert any(line.strip().startswith("for (int64_t ") and f" {c_name}" in line for line in lines), (name, lines)
    outer, inner = page.lines_of(by_name["i.outer"]), page.lines_of(by_name["i.inner"])
    assert set(inner) < set(outer)      # the band loop encloses the loop over its rows
    assert any("#pragma omp parallel" in line for line in outer)
    vectorized = page.lines_of(by_name["j#2"])      # explicit SIMD: the loop became vector stores
    assert vectorized and all("for (" not in line for line in vectorized)
    assert any("ts_vstore" in line for line in vectorized)


def test_loops_carry_kind_stage_and_origin(kernel, tmp_path):
    page = Page(kernel.to_html(tmp_path / "k.html"))
    by_name = {loop["data-name"]: loop for loop in page.loops}
    assert by_name["i.outer"]["data-kind"] == "parallel" and "k-parallel" in by_name["i.outer"]["class"]
    assert by_name["j#2"]["data-kind"] == "vectorized"
    assert by_name["i.outer"]["data-origin"] == f"split(i, factor={ROWS})"
    assert by_name["i.outer"]["data-stage"] == "C"
    assert by_name["i"]["data-origin"] == "axis i" and by_name["i"]["data-stage"] == "B"


def test_profiled_page_shows_stage_times_overhead_and_redundancy(kernel, tmp_path):
    text = " ".join(Page(kernel.to_html(tmp_path / "k.html")).text)
    assert "produce B" in text and "runs per call" in text
    assert "timers' overhead" in text and "without timers" in text
    factor = kernel.lowered.redundancy["B"]
    bands = -(-(N - 1) // ROWS)             # each band of C's N - 1 rows computes its rows of B and one more
    assert factor == pytest.approx((N - 1 + bands) / N)
    assert f"computes {factor:.2f}x its points" in text


def test_lowered_page_has_c_without_compiling(tmp_path):
    s, args, _ = stencil()
    page = Page(ts.lower(s, args, name="blur").to_html(tmp_path / "l.html"))
    assert any(line.startswith("int blur(") for line in page.c_lines)
    assert all(loop["data-c"] for loop in page.loops)
    assert "No stage times" in " ".join(page.text)


def test_tile_figure_is_drawn_for_the_compute_at_stage(kernel, tmp_path):
    doc = kernel.to_html(tmp_path / "k.html").read_text()
    assert doc.count("<figure class=\"tilefig\">") == 1
    assert "B</b> computed at <b>C.i.outer" in doc
    assert "Hatched red: the halo" in doc


def test_to_html_rejects_other_objects(tmp_path):
    from tesched.viz import write_kernel_page
    with pytest.raises(TypeError, match="expected a lowered function or a kernel, got object"):
        write_kernel_page(object(), tmp_path / "x.html")


def test_loops_inside_an_unrolled_loop_share_its_c_lines(tmp_path, rand):
    A = ts.placeholder((4, 8), name="A")
    B = ts.compute((4, 8), lambda i, j: A[i, j] + 1.0, name="B")
    s = ts.create_schedule(B.op)
    s[B].unroll(s[B].op.axis[0])
    f = ts.build(s, [A, B], name="unrolled")
    a = rand((4, 8))
    np.testing.assert_allclose(f(a), a + 1, rtol=1e-6)
    page = Page(f.to_html(tmp_path / "u.html"))
    by_name = {loop["data-name"]: loop for loop in page.loops}
    assert by_name["i"]["data-kind"] == "unrolled" and by_name["i"]["data-c"]
    assert by_name["j"]["data-c"] == by_name["i"]["data-c"]     # j exists only inside i's copies
    assert sum("for (int64_t j" in line for line in page.lines_of(by_name["i"])) == 4
