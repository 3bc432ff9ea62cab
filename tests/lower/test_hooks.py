"""The viewer's page writers named by :mod:`tesched.lower.hooks`, and the watchers of ``lower()``."""
import pytest

import tesched as ts
from tesched.lower import hooks


def test_every_named_page_writer_exists_in_the_viewer():
    import importlib
    viewer = importlib.import_module(hooks.VIEWER)
    assert all(callable(getattr(viewer, name)) for name in hooks.PAGE_WRITERS.values())


def test_an_unknown_kind_of_page_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="'schedule' pages"):
        hooks.write_page("schedule", object(), tmp_path / "x.html")


def test_watch_lowering_sees_each_lowered_function_inside_the_block_only():
    A = ts.placeholder((8,), name="A")
    B = ts.compute((8,), lambda i: A[i] + 1.0, name="B")
    s = ts.create_schedule(B.op)
    seen = []
    with hooks.watch_lowering(seen.append):
        f = ts.lower(s, [A, B])
    ts.lower(s, [A, B])
    assert seen == [f]
