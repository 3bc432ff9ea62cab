"""Chains of split/tile/fuse/reorder on 1-3 stage pipelines, as replayable recipes, and a child worker.

A *recipe* is plain data (JSON): the pipeline's name, then steps ``[stage, primitive, arguments...]`` whose
loop arguments are positions in the stage's current loop order, so the same recipe replays the same
schedule in another process. :func:`run_recipe` replays one, lowers it (timed), builds it and compares it
with NumPy. ``python -m tests.poly.chains`` is the child process of :class:`Worker`: it reads one recipe
per line and answers one JSON line each, so a parent can give up on a case that does not finish (a hang)
and start a new child, as the fuzz campaign does (:mod:`tests.fuzz.runner`).
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

import tesched as ts

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Pipeline:
    inputs: list
    stages: list            # computed tensors, producers first; the last is the output
    reference: Callable[..., np.ndarray]


def one_stage() -> Pipeline:
    """B = 2A on a 13x11 box (no extent divides the factors drawn below evenly, most of the time)."""
    A = ts.placeholder((13, 11), name="A")
    B = ts.compute((13, 11), lambda y, x: A[y, x] * 2.0, name="B")
    return Pipeline([A], [B], lambda a: a * 2)


def stencil_pair() -> Pipeline:
    """P = 2A + 1, C = a 3-point stencil of P along rows."""
    A = ts.placeholder((12, 10), name="A")
    P = ts.compute((12, 10), lambda i, j: A[i, j] * 2.0 + 1.0, name="P")
    C = ts.compute((10, 10), lambda i, j: P[i, j] + P[i + 1, j] * 2.0 + P[i + 2, j], name="C")

    def reference(a):
        p = a * 2 + 1
        return p[:-2] + 2 * p[1:-1] + p[2:]

    return Pipeline([A], [P, C], reference)


def three_stages() -> Pipeline:
    """B = 3A - 1, C = B + B one row down, D = C @ W (a reduction)."""
    A = ts.placeholder((11, 9), name="A")
    W = ts.placeholder((9, 7), name="W")
    B = ts.compute((11, 9), lambda i, j: A[i, j] * 3.0 - 1.0, name="B")
    C = ts.compute((10, 9), lambda i, j: B[i, j] + B[i + 1, j], name="C")
    k = ts.reduce_axis((0, 9), name="k")
    D = ts.compute((10, 7), lambda i, j: ts.sum(C[i, k] * W[k, j], axis=k), name="D")

    def reference(a, w):
        b = a * 3 - 1
        return (b[:-1] + b[1:]) @ w

    return Pipeline([A, W], [B, C, D], reference)


def symbolic_rows() -> Pipeline:
    """Rows of a symbolic count n: B = A + 1, C = the sum of each row of B (n is 9 when run)."""
    n = ts.var("n")
    A = ts.placeholder((n, 6), name="A")
    B = ts.compute((n, 6), lambda i, j: A[i, j] + 1.0, name="B")
    k = ts.reduce_axis((0, 6), name="k")
    C = ts.compute((n,), lambda i: ts.sum(B[i, k], axis=k), name="C")
    return Pipeline([A], [B, C], lambda a: (a + 1).sum(axis=1))


PIPELINES: dict[str, Callable[[], Pipeline]] = {f.__name__: f for f in (one_stage, stencil_pair, three_stages,
                                                                         symbolic_rows)}
SHAPES = {"n": 9}


def apply_step(s: ts.Schedule, stages: dict[str, ts.Tensor], step: list) -> None:
    """Apply one recipe step (ScheduleError if the primitive refuses it)."""
    name, primitive, *args = step
    stage = s[stages[name]]
    leaves = stage.leaf_iter_vars
    if primitive == "split":
        stage.split(leaves[args[0]], factor=args[1])
    elif primitive == "nparts":
        stage.split(leaves[args[0]], nparts=args[1])
    elif primitive == "tile":
        stage.tile(leaves[args[0]], leaves[args[0] + 1], args[1], args[2])
    elif primitive == "fuse":
        stage.fuse(leaves[args[0]], leaves[args[0] + 1])
    elif primitive == "reorder":
        stage.reorder(*[leaves[k] for k in args[0]])
    elif primitive == "inline":
        stage.compute_inline()
    elif primitive == "at":
        host = s[stages[args[0]]]
        stage.compute_at(host, host.leaf_iter_vars[args[1]])
    else:
        raise ValueError(f"unknown recipe step {step}")


def replay(recipe: dict) -> tuple[Pipeline, ts.Schedule]:
    pipe = PIPELINES[recipe["pipeline"]]()
    s = ts.create_schedule(pipe.stages[-1].op)
    stages = {t.name: t for t in pipe.stages}
    for step in recipe["steps"]:
        apply_step(s, stages, step)
    return pipe, s


def _array(t: ts.Tensor, rng: np.random.Generator) -> np.ndarray:
    shape = [d if isinstance(d, int) else SHAPES[d.name] for d in t.shape]
    return rng.uniform(-1, 1, shape).astype(np.float32)


def run_recipe(recipe: dict) -> dict:
    """Replay, lower (timed), build and compare with NumPy: ``{"status": ok|rejected|wrong, ...}``."""
    try:
        pipe, s = replay(recipe)
        args = pipe.inputs + [pipe.stages[-1]]
        start = time.perf_counter()
        func = ts.lower(s, args, name="chain")
        lower_s = time.perf_counter() - start
        kernel = ts.build(func)
    except ts.ScheduleError as err:
        return {"status": "rejected", "detail": str(err).splitlines()[0]}
    rng = np.random.default_rng(0)
    arrays = [_array(t, rng) for t in pipe.inputs]
    got, want = kernel(*arrays), pipe.reference(*arrays)
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4, atol=1e-4):
        return {"status": "wrong", "lower_s": lower_s, "ir": str(func)}
    return {"status": "ok", "lower_s": lower_s}


def _forward(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put("")           # end of output: the child died


class Worker:
    """A child process running recipes; :meth:`run` gives up after ``timeout`` seconds (then restarts)."""

    def __init__(self, timeout: float):
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None
        self.lines: queue.Queue = queue.Queue()

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        proc = subprocess.Popen([sys.executable, "-m", "tests.poly.chains"], cwd=ROOT, env=env, text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.lines = queue.Queue()
        threading.Thread(target=_forward, args=(proc.stdout, self.lines), daemon=True).start()
        return proc

    def run(self, recipe: dict) -> dict:
        """The child's answer for ``recipe``, or ``{"status": "hang"}`` / ``{"status": "crash"}``."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(recipe) + "\n")
        self.proc.stdin.flush()
        try:
            line = self.lines.get(timeout=self.timeout)
        except queue.Empty:
            self.close()
            return {"status": "hang", "detail": f"no answer in {self.timeout:.0f} s"}
        return json.loads(line) if line.strip() else {"status": "crash"}

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def main() -> int:
    for line in sys.stdin:
        try:
            answer = run_recipe(json.loads(line))
        except Exception as err:  # any other exception is a bug of the compiler: report it to the parent
            answer = {"status": "error", "detail": f"{type(err).__name__}: {err}"}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
