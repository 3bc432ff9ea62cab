"""PNG export of the tile figure (tesched/viz/png.py), with matplotlib when installed."""
import pytest

import tesched as ts
from tests.viz.helpers import stencil


def test_png_of_the_tile_figure(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is an optional extra (pip install tesched[viz])")
    s, args, _ = stencil()
    out = ts.save_tile_png(ts.lower(s, args), tmp_path / "tile.png", stage="B")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_png_names_the_stages_that_can_be_drawn(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is an optional extra (pip install tesched[viz])")
    s, args, _ = stencil()
    with pytest.raises(ValueError, match=r"stage 'C' of main is not computed at a loop.*\(stages computed at a loop: B\)"):
        ts.save_tile_png(ts.lower(s, args), tmp_path / "tile.png", stage="C")


def test_missing_matplotlib_names_the_extra(tmp_path, monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    s, args, _ = stencil()
    with pytest.raises(ImportError, match=r"pip install tesched\[viz\]"):
        ts.save_tile_png(ts.lower(s, args), tmp_path / "tile.png")
