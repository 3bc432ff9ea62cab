"""User names reach a page only as text: a stage named like a script tag renders as those characters."""
import numpy as np

import tesched as ts
from tests.viz.helpers import N, stencil
from tests.viz.page_parser import Page

EVIL = "<script>alert(1)</script>"
ATTR = '" onmouseover="alert(2)'


def test_a_stage_named_like_a_script_renders_as_text(tmp_path):
    s, args, reference = stencil(producer_name=EVIL)
    f = ts.build(s, args, name=ATTR, profile=True)
    a = np.random.default_rng(0).random((N, N), dtype=np.float32)
    np.testing.assert_allclose(f(a), reference(a), rtol=1e-6)
    path = f.to_html(tmp_path / "evil.html")
    doc = path.read_text()
    assert EVIL not in doc and "<script>alert" not in doc
    assert 'onmouseover="alert' not in doc
    page = Page(path)
    assert page.scripts == 1                    # only the page's own script
    text = "".join(page.text)
    assert EVIL in text                         # shown, as text: in the IR, the tile caption, the loop data
    assert any(loop["data-stage"] == EVIL for loop in page.loops)
    assert ATTR in text


def test_a_lowered_page_title_is_escaped(tmp_path):
    s, args, _ = stencil()
    doc = ts.lower(s, args).to_html(tmp_path / "t.html", title=EVIL).read_text()
    assert EVIL not in doc and "&lt;script&gt;alert(1)&lt;/script&gt;" in doc
