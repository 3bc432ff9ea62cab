"""Statements over their loop values (:func:`tesched.poly.stages._inverse`, :class:`~tesched.poly.model.LoopSpace`).

isl's AST generator sees each statement over the values of its loops after split, tile, fuse and reorder,
with its coordinates recovered as ``outer * factor + inner`` and ``fused // extent``, ``fused % extent``.
Checked here: that description is exact (the loop values of a domain are in one-to-one correspondence
with its points), and random chains of these primitives on 1-3 stage pipelines (non-dividing factors,
producers computed at the chained loops, reductions, a symbolic extent) lower in bounded time and compute
what NumPy computes. Those run in a child process with a hard timeout, as the fuzz campaign does, so a
schedule whose lowering never ends fails its example instead of the session.
"""
from __future__ import annotations

import statistics

import islpy as isl
import pytest
from hypothesis import HealthCheck, event, given, note, reject, settings, target
from hypothesis import strategies as st

import tesched as ts
from tesched.poly.domains import build_domains
from tesched.poly.model import PolyModel
from tesched.poly.stages import declare_stages

from .chains import PIPELINES, Worker, apply_step, replay

HARD_TIMEOUT_S = 120.0          # per example, in the child: far above any lowering seen (under 1 s)


def _step(data: st.DataObject, stage: ts.Stage, name: str) -> list:
    """One random split/nparts/tile/fuse/reorder of ``stage``'s current loops, as a recipe step."""
    leaves = stage.leaf_iter_vars
    n = len(leaves)
    kind = data.draw(st.sampled_from(["split", "nparts", "tile", "fuse", "reorder"]), label=f"{name} step")
    if kind in ("split", "nparts"):
        return [name, kind, data.draw(st.integers(0, n - 1)), data.draw(st.integers(1, 7 if kind == "split" else 4))]
    if kind in ("tile", "fuse") and n >= 2:
        pos = data.draw(st.integers(0, n - 2))
        return [name, kind, pos] + ([data.draw(st.integers(1, 7)), data.draw(st.integers(1, 7))] if kind == "tile" else [])
    return [name, "reorder", data.draw(st.permutations(range(n)))]


def draw_recipe(data: st.DataObject, pipeline: str, max_steps: int = 5) -> dict:
    """A random chain per stage (consumers first), producers placed at the root, inlined or at a loop of
    a later stage; steps a primitive refuses (a fuse of non-adjacent loops, say) are left out."""
    pipe = PIPELINES[pipeline]()
    s = ts.create_schedule(pipe.stages[-1].op)
    stages = {t.name: t for t in pipe.stages}
    steps: list = []

    def attempt(step: list) -> None:
        try:
            apply_step(s, stages, step)
        except ts.ScheduleError:
            return
        steps.append(step)

    for k in reversed(range(len(pipe.stages))):
        tensor = pipe.stages[k]
        if k < len(pipe.stages) - 1:
            place = data.draw(st.sampled_from(["root", "inline", "at", "at"]), label=f"{tensor.name} placement")
            if place == "inline" and not tensor.op.reduce_axis:
                attempt([tensor.name, "inline"])
                continue
            if place == "at":
                host = data.draw(st.sampled_from(pipe.stages[k + 1:]), label="host")
                loops = len(s[host].leaf_iter_vars)
                attempt([tensor.name, "at", host.name, data.draw(st.integers(0, loops - 1), label="loop")])
        for _ in range(data.draw(st.integers(1, max_steps), label=f"{tensor.name} steps")):
            attempt(_step(data, s[tensor], tensor.name))
    return {"pipeline": pipeline, "steps": steps}


@pytest.mark.slow
def test_the_reported_tile_fuse_tile_fuse_loop_space_is_exact():
    recipe = {"pipeline": "one_stage", "steps": [["B", "tile", 0, 5, 3], ["B", "fuse", 0], ["B", "fuse", 1],
                                                 ["B", "tile", 0, 6, 7], ["B", "fuse", 0], ["B", "fuse", 1],
                                                 ["B", "fuse", 0]]}
    _check_loop_space(recipe)


def _check_loop_space(recipe: dict) -> None:
    pipe, s = replay(recipe)
    model = PolyModel(s, pipe.inputs + [pipe.stages[-1]])
    declare_stages(model)
    build_domains(model)
    for stmt in model.statements.values():
        if stmt.space is None:
            continue
        loops = stmt.loop_domain
        coords = isl.Map.from_multi_aff(stmt.space.coordinates(stmt))
        image = loops.apply(coords)
        assert image.is_equal(stmt.domain), (stmt.name, recipe)
        # one loop point per coordinate point: the map restricted to the loop domain is injective
        assert coords.intersect_domain(loops).is_injective(), (stmt.name, recipe)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), pipeline=st.sampled_from(sorted(PIPELINES)))
def test_loop_space_is_a_bijection(data, pipeline):
    recipe = draw_recipe(data, pipeline)
    note(str(recipe))
    try:
        _check_loop_space(recipe)
    except ts.ScheduleError:
        reject()


@pytest.fixture(scope="module")
def worker(module_cache):
    w = Worker(HARD_TIMEOUT_S)
    yield w
    w.close()


LOWER_TIMES: list[float] = []


@pytest.fixture(scope="module")
def lowering_report():
    """Print the lowering times of the chains (run pytest with ``-s`` to see them)."""
    yield
    if LOWER_TIMES:
        times = sorted(LOWER_TIMES)
        print(f"\nchains lowered: {len(times)}, median {statistics.median(times):.3f} s, "
              f"max {times[-1]:.3f} s")


def test_a_producer_at_tiles_of_a_split_fused_loop_with_a_symbolic_extent_lowers(worker):
    """A drawn chain whose footprint's exact per-iteration box had dozens of pieces (nested floors of the
    tiled, reordered split of a fused row-and-reduce loop over ``n`` rows): lowering it never ended. The
    box is coarsened there (:func:`tesched.poly.domains.bounding_box`); the kernel still matches NumPy."""
    recipe = {"pipeline": "symbolic_rows",
              "steps": [["C", "fuse", 0], ["C", "split", 0, 5], ["C", "reorder", [1, 0]], ["C", "tile", 0, 2, 5],
                        ["B", "at", "C", 1], ["B", "fuse", 0], ["B", "reorder", [0]], ["B", "reorder", [0]],
                        ["B", "reorder", [0]], ["B", "split", 0, 1]]}
    answer = worker.run(recipe)
    assert answer["status"] == "ok", answer


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])
@given(data=st.data(), pipeline=st.sampled_from(sorted(PIPELINES)))
def test_random_chains_lower_in_bounded_time_and_match_numpy(data, pipeline, worker, lowering_report):
    recipe = draw_recipe(data, pipeline)
    note(str(recipe))
    answer = worker.run(recipe)
    if answer["status"] == "rejected":
        reject()
    assert answer["status"] == "ok", answer
    LOWER_TIMES.append(answer["lower_s"])
    target(answer["lower_s"], label="lowering seconds")     # steer the search toward slow schedules
    event(f"lowering {'under 0.1 s' if answer['lower_s'] < 0.1 else 'under 1 s' if answer['lower_s'] < 1 else 'over 1 s'}")
