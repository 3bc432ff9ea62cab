"""The tile/halo figure as a PNG, drawn with matplotlib (an optional extra: ``pip install tesched[viz]``).

The same :func:`~tesched.viz.tiles.projection` as the HTML pages' SVG: the consumer's tile and its
neighbours on the left, the producer region it needs, the recomputed halo and the neighbours' regions on
the right, to the same scale. For docs and tutorials.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tesched.lower.func import LoweredFunc
from tesched.poly.tiles import tile_geometry
from tesched.viz.tiles import Panel, Projection, Rect, projection


def _matplotlib() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ImportError("save_tile_png draws with matplotlib, which is not installed: "
                          "pip install tesched[viz]") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _projection_of(func: LoweredFunc, stage: str | None) -> Projection:
    candidates = [sm for sm in func.model.stages if sm.parent is not None]
    if stage is not None:
        candidates = [sm for sm in candidates if sm.name == stage]
    for sm in candidates:
        g = tile_geometry(func.model, sm)
        if g is not None:
            return projection(g)
    inside = ", ".join(sm.name for sm in func.model.stages if sm.parent is not None) or "none"
    what = f"stage {stage!r}" if stage is not None else "any stage"
    raise ValueError(f"save_tile_png: {what} of {func.name} is not computed at a loop of another with constant "
                     f"sizes (stages computed at a loop: {inside})")


def _draw(ax: Any, panel: Panel, layers: list[tuple[tuple[Rect, ...], dict]], title: str) -> None:
    from matplotlib.patches import Rectangle
    ax.add_patch(Rectangle((0, 0), panel.cols, panel.rows, facecolor="#f4f6f7", edgecolor="#999999"))
    for rects, style in layers:
        for r in rects:
            ax.add_patch(Rectangle((r.x0, r.y0), r.x1 - r.x0 + 1, r.y1 - r.y0 + 1, **style))
    ax.set_xlim(-0.5, panel.cols + 0.5)
    ax.set_ylim(panel.rows + 0.5, -0.5)
    ax.set_aspect("equal")
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=7)


def save_png(func: LoweredFunc, path: str | Path, stage: str | None = None, dpi: int = 120) -> Path:
    """Draw one ``compute_at`` stage's tile figure (see :func:`tesched.viz.save_tile_png`) to ``path``."""
    plt = _matplotlib()
    p = _projection_of(func, stage)
    g = p.geometry
    cols = max(p.consumer.cols, p.producer.cols)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 4.2), gridspec_kw={"width_ratios": [
        p.consumer.cols / cols, p.producer.cols / cols]})
    dashed = {"fill": False, "linestyle": "--", "linewidth": 0.8}
    _draw(left, p.consumer, [(p.neighbour_tiles, dict(dashed, edgecolor="#2e86c1")),
                             (p.tile, {"facecolor": "#aed6f1", "edgecolor": "#2e86c1"})],
          f"{g.consumer}: one iteration's tile ({p.consumer.axis_names()})")
    _draw(right, p.producer, [(p.footprint, {"facecolor": "#abebc6", "edgecolor": "#27ae60"}),
                              (p.halo, {"facecolor": "#f5b7b1", "edgecolor": "#e74c3c", "hatch": "///"}),
                              (p.neighbour_footprints, dict(dashed, edgecolor="#27ae60"))],
          f"{g.producer}: region computed, halo hatched ({p.producer.axis_names()})")
    where = ", ".join(f"{loop}={v}" for loop, v in zip(g.loops, g.prefix))
    fig.suptitle(f"{g.producer} computed at {g.consumer}.{g.loops[-1]} ({where}); dashed: neighbouring iterations",
                 fontsize=9)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return out
