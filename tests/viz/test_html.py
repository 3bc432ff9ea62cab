"""Escaping and the page skeleton (tesched/viz/html.py)."""
from tesched.viz import html


def test_text_and_attributes_are_escaped():
    assert html.text("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert html.attr('a"b<') == '"a&quot;b&lt;"'


def test_anchor_keeps_only_safe_characters():
    name = html.anchor("k", 'fused_conv"><img src=x>')
    assert all(c.isalnum() or c in "-_" for c in name)
    assert html.anchor("k", "a.b") != html.anchor("k", "a_b")


def test_page_is_self_contained_and_escapes_its_title():
    doc = html.page("<b>title</b>", "<p>body</p>")
    assert "&lt;b&gt;title&lt;/b&gt;" in doc
    assert "<p>body</p>" in doc
    for remote in ("http://", "https://", "src=\"//", "<link", "@import"):
        assert remote not in doc.replace("http://www.w3.org/2000/svg", "")
    assert doc.count("<script>") == 1 and "<style>" in doc
