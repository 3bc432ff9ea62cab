"""Hand schedules of Halide's applications as declared in :mod:`tesched.recipes` (:mod:`.filters`,
:mod:`.bilateral_grid`, :mod:`.camera_pipe`, :mod:`.local_laplacian`, :mod:`.pyramid`), each following
the app's published CPU schedule in tesched's vocabulary.

What Halide leaves unscheduled is inlined (Halide's default), what it computes at the root is computed
at the root, ``compute_at``/``store_at`` become sliding windows over strips of rows, ``parallel(y, n)``
is a split of the rows by ``n`` with the outer loop parallel, and ``vectorize(x, n)`` a split of the
innermost axis by the target's vector width with the inner loop vectorized. Where tesched cannot place a
stage as Halide does, the docstring says what it does instead. Each function takes the declared output
(or :class:`~tesched.recipes.filters.App`) and returns a schedule; this module declares nothing and runs
nothing.
"""
from __future__ import annotations

from tesched.recipes.filters import App
from tesched.schedule.schedule import Schedule, create_schedule
from tesched.target import Target
from tesched.te.tensor import IterVar, Tensor


def stages_of(output: Tensor) -> dict[str, Tensor]:
    """Every computed stage ``output`` depends on (itself included), by operation name."""
    found: dict[str, Tensor] = {}
    todo = [output]
    while todo:
        t = todo.pop()
        if t.op.name in found or not hasattr(t.op, "body"):
            continue
        found[t.op.name] = t
        todo.extend(t.op.input_tensors)
    return found


def _lanes(dtype: str = "float32") -> int:
    return Target().lanes(dtype)


def _vectorize_x(s: Schedule, t: Tensor, lanes: int, x: IterVar | None = None) -> tuple[IterVar, IterVar]:
    """Split the innermost axis (or ``x``) of ``t`` by ``lanes``, the inner loop vectorized."""
    xo, xi = s[t].split(t.op.axis[-1] if x is None else x, lanes)
    s[t].vectorize(xi)
    return xo, xi


def _rows_parallel(s: Schedule, t: Tensor, rows: int, lanes: int) -> tuple[IterVar, IterVar]:
    """Halide's ``parallel(y, rows).vectorize(x, lanes)``: returns the row loops ``(yo, yi)``."""
    yo, yi = s[t].split(t.op.axis[-2], rows)
    s[t].parallel(yo)
    _vectorize_x(s, t, lanes)
    return yo, yi


def _strips(s: Schedule, t: Tensor, rows: int, lanes: int, channels_inside: bool = False):
    """The output in parallel strips of ``rows`` rows, ``x`` vectorized; with ``channels_inside``, the
    leading channel axis moved inside the rows (Halide's ``reorder(x, c, yi, yo)``). Returns ``(yo, yi)``."""
    *lead, y, x = t.op.axis
    yo, yi = s[t].split(y, rows)
    xo, xi = s[t].split(x, lanes)
    s[t].reorder(yo, yi, *lead, xo, xi) if channels_inside else s[t].reorder(*lead, yo, yi, xo, xi)
    s[t].parallel(yo)
    s[t].vectorize(xi)
    return yo, yi


def _window(s: Schedule, t: Tensor, out: Tensor, compute: IterVar, store: IterVar, lanes: int) -> None:
    """``t.compute_at(out, compute).store_at(out, store).vectorize(x, lanes)``: a sliding window."""
    s[t].compute_at(s[out], compute)
    s[t].store_at(s[out], store)
    _vectorize_x(s, t, lanes)


def unsharp(app: App, rows: int = 32) -> Schedule:
    """Halide's: strips of 32 rows in parallel, channels inside the rows; ``gray``, ``blur_y`` and
    ``ratio`` computed per row and stored per strip; ``blur_x`` and ``sharpen`` inlined."""
    s = create_schedule(app.output.op)
    lanes = _lanes()
    yo, yi = _strips(s, app.output, rows, lanes, channels_inside=True)
    for name in ("blur_x", "sharpen"):
        s[app[name]].compute_inline()
    for name in ("gray", "blur_y", "ratio"):
        _window(s, app[name], app.output, yi, yo, lanes)
    return s


def harris(app: App, rows: int = 32) -> Schedule:
    """Halide's: strips of 32 rows in parallel; ``gray``, ``Ix`` and ``Iy`` computed per row and stored
    per strip; the products and box sums inlined."""
    s = create_schedule(app.output.op)
    lanes = _lanes()
    yo, yi = _strips(s, app.output, rows, lanes)
    for name in ("Ixx", "Iyy", "Ixy", "Sxx", "Syy", "Sxy"):
        s[app[name]].compute_inline()
    for name in ("gray", "Ix", "Iy"):
        _window(s, app[name], app.output, yi, yo, lanes)
    return s


def nl_means(app: App, tile_y: int = 8, tile_x: int = 16) -> Schedule:
    """Halide's: the output in ``8 x 16`` tiles, rows of tiles in parallel; per tile, the difference
    planes ``d`` and their vertical sums ``blur_d_y`` for the whole search window; the weighted sums per
    tile, the search loops outermost, each plane's patch sums ``blur_d`` computed per search offset; the
    weights inlined. ``clamped`` is computed at the root (Halide inlines its boundary condition)."""
    s = create_schedule(app.output.op)
    lanes = _lanes()
    out, sums = app.output, app["nlm_sum"]
    c, y, x = out.op.axis
    yo, xo, yi, xi = s[out].tile(y, x, tile_y, tile_x)
    s[out].reorder(yo, xo, c, yi, xi)
    s[out].parallel(yo)
    s[out].vectorize(xi)
    s[app["w"]].compute_inline()
    s[sums].compute_at(s[out], xo)
    sc, sy_, sx_ = sums.op.axis
    ry, rx = sums.op.reduce_axis
    s[sums].reorder(ry, rx, sc, sy_, sx_)
    s[sums].vectorize(sx_)
    s[app["blur_d"]].compute_at(s[sums], rx)
    s[app["blur_d"]].vectorize(app["blur_d"].op.axis[-1])
    for name in ("blur_d_y", "d"):
        s[app[name]].compute_at(s[out], xo)
        _vectorize_x(s, app[name], lanes)
    return s


def bilateral_grid(app: App) -> Schedule:
    """Halide's: the histogram at the root (Halide computes it per row of ``blurz``; a scatter has no
    row loop of its own here); ``blurz`` parallel over grid rows, ``blurx`` and ``blury`` parallel over
    intensity planes, all vectorized along x; the slice parallel over rows, vectorized."""
    s = create_schedule(app.output.op)
    lanes = _lanes()
    for name, outer in (("blurz", 2), ("blurx", 1), ("blury", 1)):
        t = app[name]
        c, z, y, x = t.op.axis
        order = (y, c, z) if outer == 2 else (z, c, y)
        s[t].reorder(*order, x)
        s[t].parallel(order[0])
        _vectorize_x(s, t, lanes)
    _rows_parallel(s, app.output, 8, lanes)
    return s


QUADS = ("r_gr", "b_gr", "r_gb", "b_gb", "r_b", "b_r")
"""The camera pipeline's half-resolution demosaic stages."""


def camera_pipe(app: App, rows: int = 32) -> Schedule:
    """Halide's, but for where the demosaic runs: the output in parallel strips of ``rows`` rows, two rows
    at a time, channels inside the columns; ``curved`` computed per pair of rows and stored per strip (a
    sliding window), the colour correction inlined into it; ``denoised``, ``deinterleaved``, ``g_r``,
    ``g_b``, the six interpolated half-resolution planes and the demosaic's output computed per strip
    (Halide slides the half-resolution stages and computes the demosaic per vector of ``curved``: tesched
    refuses those windows, read through ``(y - 1) // 2``, and the demosaic's select tree inlined into
    ``curved`` makes a C file that compiles for a minute); the tone curve at the root; the sharpening's
    blurs inlined. Vectors of ``int16`` lanes."""
    s = create_schedule(app.output.op)
    lanes = _lanes("int16")
    out = app.output
    c, y, x = out.op.axis
    yo, yr = s[out].split(y, rows)
    yi, yii = s[out].split(yr, 2)
    xo, xi = s[out].split(x, lanes)
    s[out].reorder(yo, yi, yii, xo, c, xi)
    s[out].parallel(yo)
    s[out].vectorize(xi)
    s[out].unroll(c)
    for name in ("corrected", "unsharp_y", "unsharp"):
        s[app[name]].compute_inline()
    _window(s, app["curved"], out, yi, yo, lanes)
    for name in ("denoised", "deinterleaved", "g_r", "g_b", *QUADS, "demosaiced"):
        s[app[name]].compute_at(s[out], yo)
        _vectorize_x(s, app[name], lanes)
    return s


def local_laplacian(output: Tensor, levels: int, big_levels: int = 5) -> Schedule:
    """Halide's: the remapping table at the root; the processed images, the resampling halves and the
    Laplacian levels inlined; levels ``1 .. big_levels - 1`` of the input and processed pyramids at the
    root, parallel over strips of rows and vectorized; their output pyramid levels computed per output
    row and stored per strip of 64 rows; the deeper levels at the root, the processed ones parallel over
    the intensity levels; the output in parallel strips of 64 rows."""
    s = create_schedule(output.op)
    lanes = _lanes()
    st = stages_of(output)
    for name, t in st.items():
        if name.endswith("x") or name.startswith(("gup", "outup", "lpyr", "gpyr0")) or \
                (name.startswith("outlpyr") and name != f"outlpyr{levels - 1}"):
            s[t].compute_inline()
    yo, yi = _strips(s, output, 64, lanes)
    for j in range(1, levels):
        gp, ip, op = st[f"gpyr{j}"], st[f"inpyr{j}"], st.get(f"outgpyr{j}")
        if j < big_levels:
            _rows_parallel(s, ip, 32, lanes)
            k, y, x = gp.op.axis
            gyo, gyi = s[gp].split(y, 8)
            s[gp].reorder(gyo, gyi, k, x)
            s[gp].parallel(gyo)
            _vectorize_x(s, gp, lanes)
            if op is not None:
                _window(s, op, output, yi, yo, lanes)
        else:
            s[gp].parallel(gp.op.axis[0])
    return s


def interpolate(output: Tensor, levels: int) -> Schedule:
    """Halide's: every level of both pyramids at the root, parallel over strips of 8 rows and vectorized;
    the horizontal halves (``downx``, ``upx``) and ``upy`` inlined."""
    s = create_schedule(output.op)
    lanes = _lanes()
    for name, t in stages_of(output).items():
        if name.startswith(("downx", "upx", "upy")):
            s[t].compute_inline()
        else:
            _rows_parallel(s, t, 8, lanes)
    return s


__all__ = ["bilateral_grid", "camera_pipe", "harris", "interpolate", "local_laplacian", "nl_means", "stages_of",
           "unsharp"]
