"""The bilateral grid of :mod:`tesched.recipes.bilateral_grid`, written with PyTorch tensor ops so that
autograd differentiates it: the reference and the peer of ``benchmarks/gradients.py``.

The same arithmetic in the same order and dtype (float32): the histogram through a repeat-edge border
(``index_add_`` into the flattened grid, the bin index computed from the value and not differentiated, as
in tesched), the ``[1 4 6 4 1]`` blurs along z, x and y as sums of shifted slices, and the trilinear slice
as gathers. It holds no timing and no tesched code.
"""
from __future__ import annotations

from typing import Any, Callable

from tesched.recipes.bilateral_grid import TAPS, grid_shape


def bilateral_grid_torch(h: int, w: int, s_sigma: int = 8, r_sigma: float = 0.1) -> Callable[[Any], Any]:
    """A function of a ``(h, w)`` float32 torch tensor returning the filtered image, differentiable with
    respect to it (PyTorch's subgradients: the bin indices are piecewise constant)."""
    import torch

    nz, gy, gx = grid_shape(h, w, s_sigma, r_sigma)
    inv_r, half = 1.0 / r_sigma, s_sigma // 2
    cell = torch.arange(s_sigma)
    rows = ((torch.arange(gy + 4)[:, None] - 2) * s_sigma + cell - half).clamp(0, h - 1)     # (gy+4, s)
    cols = ((torch.arange(gx + 4)[:, None] - 2) * s_sigma + cell - half).clamp(0, w - 1)     # (gx+4, s)
    cy = torch.arange(gy + 4)[:, None, None, None].expand(gy + 4, s_sigma, gx + 4, s_sigma)
    cx = torch.arange(gx + 4)[None, None, :, None].expand(gy + 4, s_sigma, gx + 4, s_sigma)
    y, x = torch.arange(h)[:, None].expand(h, w), torch.arange(w)[None, :].expand(h, w)
    yi, xi = y // s_sigma, x // s_sigma
    yf, xf = (y % s_sigma).float() * (1.0 / s_sigma), (x % s_sigma).float() * (1.0 / s_sigma)

    def blur(grid: Any, axis: int, size: int) -> Any:
        return sum(t * grid.narrow(axis, i, size) for i, t in enumerate(TAPS))

    def filtered(img: Any) -> Any:
        val = img[rows[:, :, None, None], cols[None, None, :, :]].clamp(0.0, 1.0)           # (gy+4, s, gx+4, s)
        zi = (val.detach() * inv_r + 0.5).to(torch.int32) + 2
        flat = ((zi * (gy + 4) + cy) * (gx + 4) + cx).reshape(-1).long()
        cells = (nz + 4) * (gy + 4) * (gx + 4)
        sums = torch.zeros(cells).index_add(0, flat, val.reshape(-1))
        counts = torch.zeros(cells).index_add(0, flat, torch.ones(flat.shape[0]))
        grid = torch.stack([sums, counts]).reshape(2, nz + 4, gy + 4, gx + 4)
        blurred = blur(blur(blur(grid, 1, nz), 3, gx), 2, gy)                                 # (2, nz, gy, gx)
        zv = img.clamp(0.0, 1.0) * inv_r
        zint = zv.detach().to(torch.int32)
        zf = zv - zint.float()
        zl = zint.long()

        def plane(z: Any) -> Any:
            g = blurred[:, z, yi, xi], blurred[:, z, yi, xi + 1], blurred[:, z, yi + 1, xi], blurred[:, z, yi + 1, xi + 1]
            return torch.lerp(torch.lerp(g[0], g[1], xf), torch.lerp(g[2], g[3], xf), yf)
        out = torch.lerp(plane(zl), plane(zl + 1), zf)
        return out[0] / out[1]
    return filtered
