"""Halide's schedules of a 3x3 box blur (tutorial lessons 5 and 8), written with tesched's names and timed.

``blur_x(y, x) = (in(y, x) + in(y, x+1) + in(y, x+2)) / 3`` and ``blur_y(y, x) = (blur_x(y, x) + blur_x(y+1,
x) + blur_x(y+2, x)) / 3`` on a 2048x2048 float32 output (input 2050x2050, no boundary condition), with:

1. root: ``blur_x`` computed whole before ``blur_y`` (tesched's default; Halide's ``compute_root``);
2. inline: ``blur_x`` substituted into ``blur_y`` (Halide's default): three evaluations per point;
3. tiling: ``blur_y`` in 32x256 tiles, ``blur_x`` computed per tile (with its two-row halo);
4. sliding window: ``blur_x.store_root().compute_at(blur_y, y)``: each row of ``blur_y`` computes one new
   row of ``blur_x`` into a circular buffer of 4 rows;
5. parallel strips: ``blur_y`` in strips of 64 rows run in parallel, ``blur_x`` stored per strip and
   computed per row (a sliding window within each strip), both vectorized;
6. tiled+vec+par (tiled, vectorized, parallel: the schedule of Halide's paper): 32x256 tiles, the tile rows parallel,
   ``blur_x`` computed per tile, both vectorized.

Each label carries the points ``blur_x`` computes over its realized size (1.00x: each point once), from
the lowered function. ``blur_rows()`` gives the section that ``benchmarks/user_schedules.py`` times
(interleaved with NumPy, median and spread, cold lowering + build time). Run alone:

    OMP_WAIT_POLICY=passive python benchmarks/user_schedules_blur.py [--size 2048] [--repeat 15]
        [--threads 2] [--warm]

which also reports this file's targets: best schedule >= 5x NumPy, the sliding window computing
``blur_x`` at most 1.05x its points, lowering + build < 1 s cold.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Callable



def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", type=int, default=2048, help="output rows and columns (default 2048)")
    parser.add_argument("--repeat", type=int, default=15, help="timed rounds (default 15)")
    parser.add_argument("--threads", type=int, default=2, help="threads for tesched and NumPy (default 2)")
    parser.add_argument("--warm", action="store_true", help="keep the kernel cache (build times then are cached)")
    args = parser.parse_args()
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "TESCHED_NUM_THREADS"):
        os.environ[variable] = str(args.threads)
    if not args.warm:
        os.environ["TESCHED_CACHE_DIR"] = tempfile.mkdtemp(prefix="tesched_blur_")
    return args


ARGS = parse_args() if __name__ == "__main__" else None   # before NumPy and OpenMP start their threads

import numpy as np  # noqa: E402

import tesched as ts  # noqa: E402
from tesched.te.tensor import ComputeOp, TensorRead  # noqa: E402
from tesched.te.visit import collect  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from user_schedules import Built, Section, Step, run_section  # noqa: E402

TILE_Y, TILE_X, STRIP, LANES = 32, 256, 64, 16


def declare(n: int):
    """The input, ``blur_x`` and ``blur_y`` for an ``n`` x ``n`` output."""
    inp = ts.placeholder((n + 2, n + 2), name="input")
    blur_x = ts.compute((n + 2, n), lambda y, x: (inp[y, x] + inp[y, x + 1] + inp[y, x + 2]) / 3.0,
                        name="blur_x")
    blur_y = ts.compute((n, n), lambda y, x: (blur_x[y, x] + blur_x[y + 1, x] + blur_x[y + 2, x]) / 3.0,
                        name="blur_y")
    return inp, blur_x, blur_y


def schedule(n: int, which: str) -> Built:
    """Halide's schedule ``which`` of the blur, with tesched's primitives."""
    inp, bx, by = declare(n)
    s = ts.create_schedule(by.op)
    y, x = s[by].op.axis
    if which == "inline":
        s[bx].compute_inline()
    elif which == "tiling":
        yo, xo, yi, xi = s[by].tile(y, x, TILE_Y, TILE_X)
        s[bx].compute_at(s[by], xo)
    elif which == "sliding window":
        s[bx].store_root()
        s[bx].compute_at(s[by], y)
    elif which == "parallel strips":
        yo, yi = s[by].split(y, factor=STRIP)
        s[by].parallel(yo)
        xo, xi = s[by].split(x, factor=LANES)
        s[by].vectorize(xi)
        s[bx].store_at(s[by], yo)
        s[bx].compute_at(s[by], yi)
        bxo, bxi = s[bx].split(s[bx].op.axis[1], factor=LANES)
        s[bx].vectorize(bxi)
    elif which == "tiled+vec+par":
        yo, xo, yi, xi = s[by].tile(y, x, TILE_Y, TILE_X)
        xio, xii = s[by].split(xi, factor=LANES)
        s[by].vectorize(xii)
        s[by].parallel(yo)
        s[bx].compute_at(s[by], xo)
        bxo, bxi = s[bx].split(s[bx].op.axis[1], factor=LANES)
        s[bx].vectorize(bxi)
    return s, [inp, by]


def producer_ratio(built: Built) -> float:
    """Points of ``blur_x`` the schedule computes (evaluations when inlined) over its realized points."""
    s, tensors = built
    bx = next(st.op for st in s.stages if st.name == "blur_x")
    by = tensors[-1]
    size = int(np.prod([int(d) for d in bx.output(0).shape]))
    if s[bx].attach_type == "inline":
        assert isinstance(by.op, ComputeOp)
        reads = len([r for r in collect(by.op.body, TensorRead) if r.tensor.op is bx])
        return reads * int(np.prod([int(d) for d in by.shape])) / size
    return ts.lower(s, tensors).redundancy.get(bx.name, 1.0)


SCHEDULES = ("root", "inline", "tiling", "sliding window", "parallel strips", "tiled+vec+par")


def blur_rows(size: int = 2048) -> Section:
    """The section of Halide's blur schedules for ``benchmarks/user_schedules.py``."""
    rng = np.random.default_rng(0)
    a = rng.random((size + 2, size + 2), dtype=np.float32)
    tmp = np.empty((size + 2, size), np.float32)
    out = np.empty((size, size), np.float32)

    def numpy_blur() -> np.ndarray:     # the same operations in the same order, into preallocated arrays
        np.add(a[:, :-2], a[:, 1:-1], out=tmp)
        np.add(tmp, a[:, 2:], out=tmp)
        np.divide(tmp, np.float32(3), out=tmp)
        np.add(tmp[:-2], tmp[1:-1], out=out)
        np.add(out, tmp[2:], out=out)
        return np.divide(out, np.float32(3), out=out)

    expected = numpy_blur().copy()
    def make(which: str) -> Callable[[], Built]:
        return lambda: schedule(size, which)

    steps = [Step(f"{k}. {which} [{producer_ratio(schedule(size, which)):.2f}x]", make(which))
             for k, which in enumerate(SCHEDULES, 1)]
    return Section(f"3x3 blur {size}x{size} float32 (Halide's schedules; [blur_x computed / its points])",
                   steps, [a], expected, float(size * size), unit="Gpix/s", rtol=1e-5, atol=1e-5,
                   numpy=numpy_blur)


def report(section: Section, result: tuple[dict[str, float], dict[str, float], float | None]) -> None:
    """This file's targets, from the medians of :func:`run_section`."""
    median, builds, numpy_rate = result
    labels = [step.label for step in section.steps]
    best = max(labels, key=median.__getitem__)
    sliding = next(label for label in labels if "sliding window" in label)
    ratio = float(sliding.rsplit("[", 1)[1].rstrip("x]"))
    slow = [f"{label} {builds[label]:.2f} s" for label in labels if builds[label] >= 1.0]
    print("targets of the blur:")
    if numpy_rate:
        speed = median[best] / numpy_rate
        print(f"  best schedule >= 5x NumPy: {'yes' if speed >= 5 else 'no'} ({best}: {speed:.2f}x)")
    print(f"  sliding window computes blur_x <= 1.05x its points: {'yes' if ratio <= 1.05 else 'no'} ({ratio:.3f}x)")
    print(f"  lowering + build < 1 s cold: {'yes' if not slow else 'no (' + ', '.join(slow) + ')'}")


if __name__ == "__main__":
    assert ARGS is not None
    blur = blur_rows(ARGS.size)
    print(f"kernel cache: {os.environ.get('TESCHED_CACHE_DIR', 'default')} ({'warm' if ARGS.warm else 'cold'})")
    report(blur, run_section(blur, ARGS.repeat, None))
