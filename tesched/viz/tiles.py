"""Drawings of one tile of a ``compute_at``: the consumer's tile, the producer region it needs, the halo
that other tiles compute again, and the neighbouring tiles' regions, to scale.

The geometry is :func:`tesched.poly.tiles.tile_geometry`'s, read off the lowered model's isl sets; this
module only chooses which one or two tensor dimensions to show (those where the region is smaller than
the tensor or moves between neighbouring tiles, then the innermost ones) and projects the boxes on them.
:func:`projection` gives the shapes to draw, shared by the SVG here and the PNG of :mod:`.png`.
"""
from __future__ import annotations

from dataclasses import dataclass

from tesched.poly.tiles import Box, TileGeometry
from tesched.viz.html import text

PANEL = 300          # largest side of a panel, in pixels


@dataclass(frozen=True)
class Rect:
    """A projected box: rows ``y0..y1`` and columns ``x0..x1`` (inclusive; one row in 1-D)."""

    y0: int
    y1: int
    x0: int
    x1: int


@dataclass(frozen=True)
class Panel:
    """One tensor's plane: its name, the dimensions shown (row, column) and its extents there."""

    tensor: str
    dims: tuple[int, ...]
    rows: int
    cols: int
    axes: tuple[str, ...]

    def rect(self, box: Box) -> Rect:
        if len(self.dims) == 1:
            d = self.dims[0]
            return Rect(0, 0, box.lo[d], box.hi[d])
        r, c = self.dims
        return Rect(box.lo[r], box.hi[r], box.lo[c], box.hi[c])

    def axis_names(self) -> str:
        """The shown dimensions by the stage's axis names: ``rows y, columns x`` (``x`` in 1-D)."""
        if len(self.dims) == 1:
            return self.axes[self.dims[0]]
        return f"rows {self.axes[self.dims[0]]}, columns {self.axes[self.dims[1]]}"


@dataclass(frozen=True)
class Projection:
    """What to draw for one :class:`TileGeometry`: two panels and the projected regions."""

    geometry: TileGeometry
    consumer: Panel
    producer: Panel
    tile: tuple[Rect, ...]
    neighbour_tiles: tuple[Rect, ...]
    footprint: tuple[Rect, ...]
    neighbour_footprints: tuple[Rect, ...]
    halo: tuple[Rect, ...]              # overlap with the neighbours along loops where footprints move
    same_footprint_loops: tuple[str, ...]   # loops whose neighbours compute the same region again


def _chosen_dims(shape: tuple[int, ...], regions: list[Box]) -> tuple[int, ...]:
    """Up to two dimensions: where the regions do not span the tensor or differ, then the innermost."""
    moving = [d for d in range(len(shape)) if shape[d] > 1 and any(
        b.lo[d] != regions[0].lo[d] or b.hi[d] != regions[0].hi[d] or b.hi[d] - b.lo[d] + 1 < shape[d]
        for b in regions)]
    rest = [d for d in reversed(range(len(shape))) if shape[d] > 1 and d not in moving]
    dims = sorted((moving + rest)[:2])
    return tuple(dims) if dims else (len(shape) - 1,)


def _panel(name: str, shape: tuple[int, ...], axes: tuple[str, ...], dims: tuple[int, ...]) -> Panel:
    if len(dims) == 1:
        return Panel(name, dims, 1, shape[dims[0]], axes)
    return Panel(name, dims, shape[dims[0]], shape[dims[1]], axes)


def projection(g: TileGeometry) -> Projection:
    """Choose the dimensions to show and project every region of ``g`` on them."""
    moving = [n for n in g.neighbours if n.footprint != g.footprint]
    fp_dims = _chosen_dims(g.producer_shape, list(g.footprint) + [b for n in moving for b in n.footprint])
    if len(g.consumer_shape) == len(g.producer_shape):
        tile_dims = fp_dims
    else:
        tile_dims = _chosen_dims(g.consumer_shape, list(g.tile) + [b for n in moving for b in n.tile])
    consumer = _panel(g.consumer, g.consumer_shape, g.consumer_axes, tile_dims)
    producer = _panel(g.producer, g.producer_shape, g.producer_axes, fp_dims)
    same = tuple(dict.fromkeys(n.loop for n in g.neighbours if n.footprint == g.footprint))
    return Projection(g, consumer, producer, tuple(consumer.rect(b) for b in g.tile),
                      tuple(consumer.rect(b) for n in moving for b in n.tile),
                      tuple(producer.rect(b) for b in g.footprint),
                      tuple(producer.rect(b) for n in moving for b in n.footprint),
                      tuple(producer.rect(b) for n in moving for b in n.overlap), same)


def scale(p: Projection) -> float:
    """Pixels per element, the same for both panels (the larger tensor fits in :data:`PANEL`)."""
    biggest = max(p.consumer.rows, p.consumer.cols, p.producer.rows, p.producer.cols, 1)
    return PANEL / biggest


def _rects(rects: tuple[Rect, ...], s: float, x0: float, y0: float, style: str) -> str:
    return "".join(f"<rect x=\"{x0 + r.x0 * s:.2f}\" y=\"{y0 + r.y0 * s:.2f}\" width=\"{(r.x1 - r.x0 + 1) * s:.2f}\" "
                   f"height=\"{(r.y1 - r.y0 + 1) * s:.2f}\" {style}/>" for r in rects)


def _panel_svg(panel: Panel, s: float, x0: float, y0: float, title: str) -> str:
    w, h = panel.cols * s, panel.rows * s
    return (f"<text x=\"{x0:.1f}\" y=\"{y0 - 6:.1f}\">{text(title)}</text>"
            f"<rect x=\"{x0:.2f}\" y=\"{y0:.2f}\" width=\"{w:.2f}\" height=\"{h:.2f}\" fill=\"#f4f6f7\" "
            f"stroke=\"#999\"/>")


def tile_svg(p: Projection, key: str) -> str:
    """The two panels side by side as an inline SVG element (user names escaped); ``key`` makes its
    pattern's id unique on the page (letters, digits, ``-`` and ``_`` only)."""
    g = p.geometry
    s = scale(p)
    gap, top = 40.0, 34.0
    cw = p.consumer.cols * s
    px = 10 + cw + gap
    width = px + p.producer.cols * s + 10
    height = top + max(p.consumer.rows, p.producer.rows) * s + 10
    hatch = (f"<defs><pattern id=\"halo-{key}\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
             "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#f5b7b1\"/>"
             "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#e74c3c\" stroke-width=\"3\"/></pattern></defs>")
    parts = [(f"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0f}\" height=\"{height:.0f}\" "
              f"viewBox=\"0 0 {width:.1f} {height:.1f}\" role=\"img\">"), hatch,
             _panel_svg(p.consumer, s, 10, top, f"{g.consumer} ({p.consumer.axis_names()})"),
             _rects(p.neighbour_tiles, s, 10, top, "fill=\"none\" stroke=\"#2e86c1\" stroke-dasharray=\"3 2\""),
             _rects(p.tile, s, 10, top, "fill=\"#aed6f1\" stroke=\"#2e86c1\""),
             _panel_svg(p.producer, s, px, top, f"{g.producer} ({p.producer.axis_names()})"),
             _rects(p.footprint, s, px, top, "fill=\"#abebc6\" stroke=\"#27ae60\""),
             _rects(p.halo, s, px, top, f"fill=\"url(#halo-{key})\" stroke=\"#e74c3c\""),
             _rects(p.neighbour_footprints, s, px, top, "fill=\"none\" stroke=\"#27ae60\" stroke-dasharray=\"3 2\""),
             "</svg>"]
    return "".join(parts)


def caption(p: Projection) -> str:
    """The figure's text: which iteration, sizes, and what is computed again (HTML, names escaped)."""
    g = p.geometry
    where = ", ".join(f"{text(loop)}={v}" for loop, v in zip(g.loops, g.prefix))
    tile_pts = sum(b.volume for b in g.tile)
    lines = [(f"<b>{text(g.producer)}</b> computed at <b>{text(g.consumer)}.{text(g.loops[-1])}</b>: iteration "
              f"{where} of {g.iterations}."),
             (f"Blue: the {tile_pts} points of {text(g.consumer)} it computes; green: the {g.computed_points} points "
              f"of {text(g.producer)} it computes for them; dashed: the neighbouring iterations' regions.")]
    if p.halo:
        lines.append("Hatched red: the halo, computed again by the neighbouring iterations.")
    if p.same_footprint_loops:
        loops = ", ".join(text(loop) for loop in p.same_footprint_loops)
        lines.append(f"Every iteration of {loops} computes this same region again.")
    return "<br>".join(lines)
