"""Halide's applications at test sizes: each declared (``tesched.recipes``), with inputs and its NumPy
reference (``tests/recipes/references.py``), for the tests of every variant (none, hand, auto)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

import tesched as ts
from tesched.recipes import app_schedules, bilateral_grid, camera_pipe, filters
from tesched.recipes.local_laplacian import local_laplacian
from tesched.recipes.pyramid import interpolate
from tests.autoschedule.helpers import interpolate_reference, local_laplacian_reference
from tests.recipes import references


@dataclass
class Case:
    """An app's arguments, its hand schedule (a function of no argument), inputs and expected output."""

    args: list
    hand: Callable[[], ts.Schedule]
    arrays: list[np.ndarray]
    expected: np.ndarray
    rtol: float
    atol: float

    @property
    def output(self) -> ts.Tensor:
        return self.args[-1]


def _rgb(h: int, w: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.05, 1.0, (3, h, w)).astype(np.float32)


def case(name: str, h: int, w: int) -> Case:
    """The app ``name`` at ``h x w`` (a few apps round the size as they need)."""
    if name in ("harris", "unsharp", "nl_means"):
        app = getattr(filters, name)(h, w)
        img = _rgb(h, w, 1)
        expected = getattr(references, name)(img)
        return Case(app.args, lambda: getattr(app_schedules, name)(app), [img], expected, 1e-4,
                    1e-4 * float(np.abs(expected).max()))
    if name == "bilateral_grid":
        app = bilateral_grid.bilateral_grid(h, w)
        img = np.random.default_rng(2).uniform(-0.1, 1.1, (h, w)).astype(np.float32)
        return Case(app.args, lambda: app_schedules.bilateral_grid(app), [img], references.bilateral_grid(img),
                    1e-4, 1e-5)
    if name == "camera_pipe":
        app = camera_pipe.camera_pipe(h, w)
        raw = np.random.default_rng(3).integers(0, 1024, (h + 24, w + 32)).astype(np.uint16)
        return Case(app.args, lambda: app_schedules.camera_pipe(app), [raw], references.camera_pipe(raw), 0, 0)
    img = np.random.default_rng(4).uniform(0.0, 1.0, (h, w)).astype(np.float32)
    A = ts.placeholder((h, w), name="A")
    if name == "local_laplacian":
        out = local_laplacian(A, 8)
        return Case([A, out], lambda: app_schedules.local_laplacian(out, 8), [img],
                    local_laplacian_reference(img, 8, 8), 1e-4, 1e-4)
    if name == "interpolate":
        out = interpolate(A, 10)
        return Case([A, out], lambda: app_schedules.interpolate(out, 10), [img],
                    interpolate_reference(img.astype(np.float64), 10), 1e-5, 1e-5)
    raise ValueError(f"no app {name!r}")


APPS = ("bilateral_grid", "camera_pipe", "harris", "unsharp", "nl_means", "local_laplacian", "interpolate")
