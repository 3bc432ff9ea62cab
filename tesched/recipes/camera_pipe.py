"""A raw camera pipeline (Halide's ``camera_pipe`` app, after FCam) declared with ``compute``, no schedule.

:func:`camera_pipe` turns a 10-bit Bayer mosaic (``uint16``, GRBG: green and red on even rows, blue and
green on odd rows) into an 8-bit planar RGB image ``(3, oh, ow)``:

1. hot-pixel suppression: each raw sample clamped to ``[0, max of its four same-colour neighbours]``;
2. deinterleave into four half-resolution planes (``g_gr, r_r, b_b, g_gb``), ``int16``;
3. demosaic (Halide's): green at red and blue sites interpolated along the direction of least change
   (stages ``g_r``, ``g_b``); red and blue at green sites interpolated and corrected by green's second
   difference; red at blue and blue at red interpolated along the diagonal of least change (six
   half-resolution stages ``r_gr``, ``b_gr``, ``r_gb``, ``b_gb``, ``r_b``, ``b_r``); the planes
   interleaved back to full resolution (``demosaiced``, a select of loads);
4. colour correction by a fixed 3x4 matrix in Q8.8 fixed point (``int32`` products, ``>> 8``);
5. a tone curve: gamma and a contrast S-curve as a 1024-entry ``uint8`` table built with ``pow`` and read
   at the clamped pixel (a gather);
6. sharpening: an unsharp mask of ``[1 2 1]`` rounding averages along y then x, added back with a
   strength in 1/32 steps, saturated to ``uint8``.

The output is cropped as Halide's is (the raw frame is 24 rows and 32 columns larger than the output, 12
and 16 on each side), so no stage reads outside the raw frame. A stage with a halo of ``r`` samples
stores coordinate ``c`` at index ``c + r``. This module declares; :mod:`tesched.recipes.app_schedules`
schedules it, and ``tests/recipes/references.py`` holds its NumPy reference.
"""
from __future__ import annotations

import numpy as np

from tesched.recipes.filters import App
from tesched.te.functions import abs as abs_
from tesched.te.functions import cast, clamp, if_then_else, maximum, power
from tesched.te.narrow import rounding_halving_add, saturate_cast
from tesched.te.tensor import compute, placeholder

BLACK, WHITE = 25, 1023
"""Raw black and white levels (10-bit sensor)."""
GAMMA, CONTRAST, SHARPEN = 2.0, 50.0, 0.75
"""Tone curve gamma and contrast, and sharpening strength."""
MATRIX_3200 = ((1.6697, -0.2693, -0.4004, -42.4346), (-0.3576, 1.0615, 1.5949, -37.1158),
               (-0.2175, -1.8751, 6.9640, -26.6970))
MATRIX_7000 = ((2.2997, -0.4478, 0.1706, -39.0923), (-0.3826, 1.5906, -0.2080, -25.4311),
               (-0.0888, -0.7344, 2.2832, -20.0826))
"""Calibrated colour matrices at 3200 K and 7000 K (rows r, g, b; columns r, g, b, offset)."""
MARGIN_Y, MARGIN_X = 12, 16
"""Raw rows and columns cropped on each side."""


def color_matrix(kelvin: float = 3700.0) -> np.ndarray:
    """The 3x4 ``int16`` Q8.8 colour matrix at ``kelvin``, interpolated in inverse kelvin by Halide's formula
    (``alpha * MATRIX_3200 + (1 - alpha) * MATRIX_7000`` with ``alpha`` 0 at 3200 K and 1 at 7000 K)."""
    alpha = (1.0 / kelvin - 1.0 / 3200) / (1.0 / 7000 - 1.0 / 3200)
    m = (np.asarray(MATRIX_3200, np.float32) * np.float32(alpha)
         + np.asarray(MATRIX_7000, np.float32) * np.float32(1 - alpha))
    return (m * np.float32(256.0)).astype(np.int16)


def curve_constants() -> tuple[float, float, float]:
    """``(a, b, 1 / (white - black))`` of the contrast curve ``a g^2 + b g`` (mirrored above 0.5)."""
    b = 2.0 - 2.0 ** (CONTRAST / 100.0)
    return 2.0 - 2.0 * b, b, 1.0 / (WHITE - BLACK)


def camera_pipe(oh: int, ow: int, kelvin: float = 3700.0) -> App:
    """The pipeline from a ``(oh + 24, ow + 32)`` ``uint16`` raw frame ``input`` to ``(3, oh, ow)`` ``uint8``.

    Example
    -------
    >>> app = camera_pipe(64, 96)
    >>> kernel = ts.build(ts.create_schedule(app.output.op), app.args)
    """
    if oh < 2 or ow < 2 or oh % 2 or ow % 2:
        raise ValueError(f"camera_pipe: the output size must be even and at least 2x2, got {oh}x{ow}")
    raw = placeholder((oh + 2 * MARGIN_Y, ow + 2 * MARGIN_X), dtype="uint16", name="input")
    hh, hw = oh // 2, ow // 2

    def shifted(y, x):      # coordinates of the output frame, as int16
        return cast("int16", raw[y + MARGIN_Y, x + MARGIN_X])

    def suppress(y, x):     # halo 6
        y, x = y - 6, x - 6
        a = maximum(maximum(shifted(y, x - 2), shifted(y, x + 2)), maximum(shifted(y - 2, x), shifted(y + 2, x)))
        return clamp(shifted(y, x), 0, a)
    denoised = compute((oh + 12, ow + 12), suppress, name="denoised")
    # halo 3 at half resolution: plane c at (y, x) is raw (2y + c // 2, 2x + c % 2)
    deint = compute((4, hh + 6, hw + 6), lambda c, y, x: denoised[2 * y + c // 2, 2 * x + c % 2], name="deinterleaved")

    def plane(c):           # a known plane at half-resolution coordinates
        return lambda y, x: deint[c, y + 3, x + 3]
    g_gr, r_r, b_b, g_gb = (plane(c) for c in range(4))

    def choose(d1, v1, d2, v2):     # the interpolation along the direction of least change
        return if_then_else(d1 < d2, v1, v2)

    def absd(a, b):
        return abs_(a - b)

    avg = rounding_halving_add
    g_r = compute((hh + 4, hw + 4), lambda y, x: choose(
        absd(g_gr(y - 2, x - 1), g_gr(y - 2, x - 2)), avg(g_gr(y - 2, x - 1), g_gr(y - 2, x - 2)),
        absd(g_gb(y - 3, x - 2), g_gb(y - 2, x - 2)), avg(g_gb(y - 3, x - 2), g_gb(y - 2, x - 2))), name="g_r")
    g_b = compute((hh + 4, hw + 4), lambda y, x: choose(
        absd(g_gb(y - 2, x - 3), g_gb(y - 2, x - 2)), avg(g_gb(y - 2, x - 3), g_gb(y - 2, x - 2)),
        absd(g_gr(y - 1, x - 2), g_gr(y - 2, x - 2)), avg(g_gr(y - 1, x - 2), g_gr(y - 2, x - 2))), name="g_b")

    def gr(y, x):
        return g_r[y + 2, x + 2]

    def gb(y, x):
        return g_b[y + 2, x + 2]

    def corrected_avg(g, g1, g2, c1, c2):    # the average of c1, c2 corrected by green's error there
        return g - avg(g1, g2) + avg(c1, c2)

    def diagonal(g, known, green, p_sites, n_sites):
        """``known`` at the other colour's site, along the diagonal (``p_sites`` or ``n_sites``, each two
        half-resolution sites) where it changes least, corrected by green's error there."""
        (p1, p2), (n1, n2) = p_sites, n_sites
        p = corrected_avg(g, green(*p1), green(*p2), known(*p1), known(*p2))
        n = corrected_avg(g, green(*n1), green(*n2), known(*n1), known(*n2))
        return choose(absd(known(*p1), known(*p2)), p, absd(known(*n1), known(*n2)), n)

    interpolated = {   # the six missing values of each Bayer quad, at half resolution with a halo of 1
        "r_gr": lambda y, x: corrected_avg(g_gr(y, x), gr(y, x), gr(y, x - 1), r_r(y, x - 1), r_r(y, x)),
        "b_gr": lambda y, x: corrected_avg(g_gr(y, x), gb(y, x), gb(y - 1, x), b_b(y, x), b_b(y - 1, x)),
        "r_gb": lambda y, x: corrected_avg(g_gb(y, x), gr(y, x), gr(y + 1, x), r_r(y, x), r_r(y + 1, x)),
        "b_gb": lambda y, x: corrected_avg(g_gb(y, x), gb(y, x), gb(y, x + 1), b_b(y, x), b_b(y, x + 1)),
        "r_b": lambda y, x: diagonal(gb(y, x), r_r, gr, ((y, x), (y + 1, x - 1)), ((y, x - 1), (y + 1, x))),
        "b_r": lambda y, x: diagonal(gr(y, x), b_b, gb, ((y, x), (y - 1, x + 1)), ((y, x + 1), (y - 1, x)))}
    quads = {name: compute((hh + 2, hw + 2), lambda y, x, f=f: f(y - 1, x - 1), name=name)
             for name, f in interpolated.items()}

    def demosaic(c, y, x):  # halo 1 at full resolution: the quads interleaved back (half-resolution index (y + 1) // 2)
        hy, hx, py, px = (y + 1) // 2, (x + 1) // 2, (y + 1) % 2, (x + 1) % 2

        def known(plane):
            return plane(hy - 1, hx - 1)

        def q(name):
            return quads[name][hy, hx]
        red = ((q("r_gr"), known(r_r)), (q("r_b"), q("r_gb")))
        green = ((known(g_gr), known(gr)), (known(gb), known(g_gb)))
        blue = ((q("b_gr"), q("b_r")), (known(b_b), q("b_gb")))

        def pick(table):
            return if_then_else(py == 0, if_then_else(px == 0, table[0][0], table[0][1]),
                                if_then_else(px == 0, table[1][0], table[1][1]))
        return if_then_else(c == 0, pick(red), if_then_else(c == 1, pick(green), pick(blue)))
    demosaiced = compute((3, oh + 2, ow + 2), demosaic, name="demosaiced")
    m = color_matrix(kelvin).astype(int)

    def correct(c, y, x):
        rgb = [cast("int32", demosaiced[k, y, x]) for k in range(3)]
        rows = [(int(m[i, 3]) + int(m[i, 0]) * rgb[0] + int(m[i, 1]) * rgb[1] + int(m[i, 2]) * rgb[2]) // 256
                for i in range(3)]
        return cast("int16", if_then_else(c == 0, rows[0], if_then_else(c == 1, rows[1], rows[2])))
    corrected = compute((3, oh + 2, ow + 2), correct, name="corrected")
    a, b, inv_range = curve_constants()

    def tone(i):
        xf = clamp(cast("float32", i - BLACK) * inv_range, 0.0, 1.0)
        g = power(xf, 1.0 / GAMMA)
        z = if_then_else(g > 0.5, 1.0 - (a * (1.0 - g) * (1.0 - g) + b * (1.0 - g)), a * g * g + b * g)
        val = cast("uint8", clamp(z * 255.0 + 0.5, 0.0, 255.0))
        return if_then_else(i <= BLACK, cast("uint8", 0), if_then_else(i > WHITE, cast("uint8", 255), val))
    curve = compute((1024,), tone, name="curve")
    curved = compute((3, oh + 2, ow + 2), lambda c, y, x: curve[clamp(cast("int32", corrected[c, y, x]), 0, 1023)],
                     name="curved")

    def blur121(p, q, r):
        return avg(avg(p, r), q)
    unsharp_y = compute((3, oh, ow + 2), lambda c, y, x: blur121(curved[c, y, x], curved[c, y + 1, x],
                                                                 curved[c, y + 2, x]), name="unsharp_y")
    unsharp = compute((3, oh, ow), lambda c, y, x: blur121(unsharp_y[c, y, x], unsharp_y[c, y, x + 1],
                                                           unsharp_y[c, y, x + 2]), name="unsharp")
    strength = int(min(255, SHARPEN * 32))

    def sharpened(c, y, x):
        v = cast("int16", curved[c, y + 1, x + 1])
        mask = v - cast("int16", unsharp[c, y, x])
        return saturate_cast(v + (mask * strength) // 32, "uint8")
    out = compute((3, oh, ow), sharpened, name="camera_pipe")
    return App([raw], out, {"denoised": denoised, "deinterleaved": deint, "g_r": g_r, "g_b": g_b, **quads,
                            "demosaiced": demosaiced, "corrected": corrected, "curve": curve, "curved": curved,
                            "unsharp_y": unsharp_y, "unsharp": unsharp})


__all__ = ["camera_pipe", "color_matrix", "curve_constants"]
