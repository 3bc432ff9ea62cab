"""Graph pages (tesched/viz/graph_page.py): groups as boxes, every unfused edge with its rule, the graph after
each pass, and a kernel section per distinct kernel, linked from its groups."""
import re

import numpy as np

from tesched import graph as G
from tesched.graph.interpret import interpret
from tests.viz.page_parser import Page


def residual_graph():
    x = G.var("data", shape=(1, 4, 8, 8))
    w = G.var("w", shape=(4, 4, 3, 3))
    conv = G.nn.conv2d(x, w, padding=1)
    relu = G.nn.relu(conv)
    out = G.add(G.nn.relu(G.nn.conv2d(relu, w, padding=1)), relu)     # relu has two consumers, neither fuses
    return G.Function([x, w], out)


def test_graph_page_shows_groups_unfused_edges_passes_and_kernels(tmp_path):
    f = residual_graph()
    rng = np.random.default_rng(0)
    w = rng.random((4, 4, 3, 3), dtype=np.float32) - 0.5
    data = rng.random((1, 4, 8, 8), dtype=np.float32)
    exe = G.build(f, params={"w": w})
    np.testing.assert_allclose(exe(data), interpret(f, data, w), rtol=1e-4, atol=1e-5)
    path = exe.to_html(tmp_path / "graph.html", title="residual")
    doc = path.read_text()
    report = exe.fusion_report
    assert report is not None and report.unfused
    for name, _ in report.groups:
        assert f">{name}</a>" in doc
    for edge in report.unfused:
        assert edge.reason.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in doc
    assert "may not follow an out_elemwise_fusable group" in doc   # relu -> conv and relu -> add
    links = set(re.findall(r'href="#([^"]+)"', doc))
    sections = set(re.findall(r'<section class="kernel" id="([^"]+)"', doc))
    assert links <= sections and len(sections) == len({id(k.kernel) for k in exe.kernels})
    assert exe.pass_history[0][0] == "input" and exe.pass_history[-1][0] == "fuse_ops"
    assert doc.count("<details><summary>") == len(exe.pass_history)
    assert Page(path).scripts == 1
