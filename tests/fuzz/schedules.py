"""Random legal schedules of the pipelines of :mod:`.pipelines`, built and compared with NumPy.

Case ``n`` picks a pipeline and a seed from ``n``, applies the pipeline's dataflow step (if any), then
visits the stages consumers first: each non-output stage is placed at the root, inlined (elementwise
stages), or computed at a loop of a stage that reads it and encloses every other reader (sometimes
stored further out: ``store_at``/``store_root``, a sliding window), sometimes with an axis bounded to its
extent (``bound``/``bound_extent``); each stage's loops are split (by factor or nparts, dividing or not),
tiled, reordered and fused at random (data-parallel with reduction loops too, loops over a symbolic
extent, then sometimes split, and ``fuse()`` of no loops), then loops are made parallel, vectorized or
unrolled and given loop pragmas and prefetches of inputs, buffers get ``storage_align``-ed strides, and
root stages of symbolic size get ``specialize``-d fast paths; a scatter stays at the root and may be made
atomic (then parallel). The lowering time of every case is recorded, in wall and CPU seconds; a case is
slow when its CPU seconds pass :data:`SLOW_LOWERING_S` (the wall time of a shared machine is mostly the
others' load). A ``ScheduleError`` from the draw
or from the legality check is a rejection (counted and listed), not a failure.
"""
from __future__ import annotations

import random
import time

import numpy as np

import tesched as ts
from tesched.schedule.kinds import THREAD_TAGS
from tesched.te.expr import Expr, Var
from tesched.te.scatter import ScatterOp
from tesched.te.tensor import ComputeOp, IterVar, PlaceholderOp
from tesched.te.visit import walk

from .outcome import describe
from .pipelines import PIPELINES, Pipeline

SLOW_LOWERING_S = 2.0            # CPU seconds of one lower()


def _effective_readers(s: ts.Schedule, stage: ts.Stage) -> list[ts.Stage]:
    """The stages that read ``stage``'s buffer: its readers, an inlined reader replaced by its own."""
    out: list[ts.Stage] = []
    for reader in s.stages:
        if isinstance(reader.op, ComputeOp) and stage in s.producers(reader):
            if reader.attach_type == "inline":
                out += [r for r in _effective_readers(s, reader) if r not in out]
            elif reader not in out:
                out.append(reader)
    return out


def _legal_loops(host: ts.Stage, readers: list[ts.Stage]) -> list:
    """Loops of ``host`` enclosing every reader (each reader is the host or is computed inside it)."""
    limit = len(host.leaf_iter_vars) - 1
    for reader in readers:
        stage = reader
        while stage is not host and stage.attach_type == "scope" and stage.attach_stage is not host:
            stage = stage.attach_stage
        if stage is host:
            continue
        if stage.attach_type != "scope":
            return []
        limit = min(limit, host.leaf_iter_vars.index(stage.attach_ivar))
    return host.leaf_iter_vars[:limit + 1]


def _transform_loops(stage: ts.Stage, rnd: random.Random, recipe: list) -> None:
    name = stage.name
    leaves = list(stage.leaf_iter_vars)
    extents = stage.extents()
    if len(leaves) >= 2 and leaves[0].iter_type == leaves[1].iter_type == "data_par" and rnd.random() < 0.3:
        fx, fy = rnd.randint(1, 6), rnd.randint(1, 6)
        stage.tile(leaves[0], leaves[1], fx, fy)
        recipe.append(f"s[{name}].tile({leaves[0].name}, {leaves[1].name}, {fx}, {fy})")
        leaves = leaves[2:]
    for axis in leaves:
        how = rnd.choice(["keep", "keep", "factor", "nparts"])
        if how == "factor":
            factor = rnd.randint(1, 7)
            stage.split(axis, factor=factor)
            recipe.append(f"s[{name}].split({axis.name}, factor={factor})")
        elif how == "nparts" and extents.get(id(axis)) is not None:
            nparts = rnd.randint(1, 4)
            stage.split(axis, nparts=nparts)
            recipe.append(f"s[{name}].split({axis.name}, nparts={nparts})")
    if rnd.random() < 0.5:
        order = list(stage.leaf_iter_vars)
        rnd.shuffle(order)
        stage.reorder(*order)
        recipe.append(f"s[{name}].reorder({', '.join(v.name for v in order)})")
    leaves = stage.leaf_iter_vars
    extents = stage.extents()
    # data-parallel and reduction loops may be fused together (the fused loop reduces); over a symbolic
    # inner extent (a value not affine in the sizes) only loops of one kind, and the fused loop may be split
    pairs = [k for k in range(len(leaves) - 1) if extents.get(id(leaves[k + 1])) is not None
             or leaves[k].iter_type == leaves[k + 1].iter_type]
    if pairs and rnd.random() < 0.3:
        k = rnd.choice(pairs)
        recipe.append(f"s[{name}].fuse({leaves[k].name}, {leaves[k + 1].name})")
        fused = stage.fuse(leaves[k], leaves[k + 1])
        if stage.extents().get(id(fused)) is None and rnd.random() < 0.5:
            factor = rnd.randint(1, 9)
            stage.split(fused, factor=factor)
            recipe.append(f"s[{name}].split({fused.name}, factor={factor})")
    if rnd.random() < 0.1:              # fuse() of no axes: an outermost loop of one iteration
        stage.fuse()
        recipe.append(f"s[{name}].fuse()")


def _inside_vectorized(stage: ts.Stage) -> bool:
    """Whether a loop enclosing ``stage`` (where it is computed at) is vectorized: a parallel loop
    there is illegal (its iterations would be SIMD lanes)."""
    while stage.attach_type == "scope":
        host, loop = stage.attach_stage, stage.attach_ivar
        enclosing = host.leaf_iter_vars[:host.leaf_iter_vars.index(loop) + 1]
        if any(host.iter_var_attrs.get(v) == "vectorized" for v in enclosing):
            return True
        stage = host
    return False


def _annotate(stage: ts.Stage, rnd: random.Random, recipe: list) -> None:
    name, leaves = stage.name, stage.leaf_iter_vars
    extents = stage.extents()
    scatter = isinstance(stage.op, ScatterOp)
    if scatter and rnd.random() < 0.5:     # atomic additions let a scatter's loops run in parallel
        stage.atomic()
        recipe.append(f"s[{name}].atomic()")
    partial = scatter and any(v.name.endswith(".v") for v in stage.op.axis)   # rfactor: rows per first loop
    if (leaves[0].iter_type == "data_par" or stage.atomic_updates or partial) and not _inside_vectorized(stage) \
            and rnd.random() < 0.3:
        stage.parallel(leaves[0])
        recipe.append(f"s[{name}].parallel({leaves[0].name})")
    free = [v for v in leaves if v.iter_type == "data_par" and v not in stage.iter_var_attrs
            and not stage.mixes_reduction(v)]
    if free and not scatter and not _inside_vectorized(stage) and rnd.random() < 0.15:
        loop, tag = rnd.choice(free), rnd.choice(THREAD_TAGS)    # on a CPU a bound loop runs in order
        stage.bind(loop, ts.thread_axis(tag))
        recipe.append(f"s[{name}].bind({loop.name}, ts.thread_axis({tag!r}))")
    if len(leaves) > 1 and not scatter and rnd.random() < 0.4 and leaves[-1] not in stage.iter_var_attrs \
            and not stage.mixes_reduction(leaves[-1]):
        stage.vectorize(leaves[-1])
        recipe.append(f"s[{name}].vectorize({leaves[-1].name})")
    if rnd.random() < 0.2:      # C loop hints: ivdep is checked by the dependence analysis
        loop = rnd.choice(leaves)
        if loop not in stage.iter_var_attrs:
            hints = [("unroll", rnd.randint(1, 8)), ("unroll_explicit", False)]
            hint, value = rnd.choice(hints + ([("ivdep", True)] if loop.iter_type == "data_par" else []))
            stage.pragma(loop, hint, value)
            recipe.append(f"s[{name}].pragma({loop.name}, {hint!r}, {value!r})")
    sizes = {id(v): v for d in stage.op.output(0).shape if isinstance(d, Expr)
             for v in walk(d) if isinstance(v, Var) and not isinstance(v, IterVar)}
    if sizes and stage.attach_type == "root" and rnd.random() < 0.4:   # a fast path for some sizes
        size = rnd.choice(list(sizes.values()))
        factor, low = rnd.randint(2, 8), rnd.randint(1, 8)
        condition = rnd.choice([size % factor == 0, size >= low, (size % factor == 0) & (size >= low)])
        stage.specialize(condition)
        recipe.append(f"s[{name}].specialize({condition!r})")
    if not stage.is_output and rnd.random() < 0.2:        # pad the buffer's row stride (TVM's storage_align)
        axes = stage.op.axis
        if len(axes) >= 2:
            factor = rnd.choice([4, 8, 16])
            offset = rnd.randrange(factor)
            stage.storage_align(axes[-2], factor, offset)
            recipe.append(f"s[{name}].storage_align({axes[-2].name}, {factor}, {offset})")
    inputs = [t for t in stage.op.input_tensors if isinstance(t.op, PlaceholderOp)]
    if inputs and rnd.random() < 0.2:
        tensor, loop, offset = rnd.choice(inputs), rnd.choice(leaves), rnd.randint(1, 3)
        stage.prefetch(tensor, loop, offset)
        recipe.append(f"s[{name}].prefetch({tensor.name}, {loop.name}, {offset})")
    if rnd.random() < 0.3:
        loop = rnd.choice(leaves)
        ext = extents.get(id(loop))
        if loop not in stage.iter_var_attrs and ext is not None and ext <= 16:
            stage.unroll(loop)
            recipe.append(f"s[{name}].unroll({loop.name})")


def _place(s: ts.Schedule, stage: ts.Stage, rnd: random.Random, recipe: list) -> None:
    if isinstance(stage.op, ScatterOp):
        return      # a scatter writes anywhere in its tensor: it stays at the root
    inlinable = not stage.op.reduce_axis
    readers = _effective_readers(s, stage)
    hosts = {h: loops for h in s.stages if isinstance(h.op, ComputeOp) and h is not stage
             and h.attach_type != "inline" and s.reads_transitively(h.op, stage.op)
             and (loops := _legal_loops(h, readers))}
    choices = ["root"] + (["inline"] if inlinable else []) + (["at", "at"] if hosts else [])
    place = rnd.choice(choices)
    if place == "inline":
        stage.compute_inline()
        recipe.append(f"s[{stage.name}].compute_inline()")
    elif place == "at":
        host = rnd.choice(list(hosts))
        loop = rnd.choice(hosts[host])
        stage.compute_at(host, loop)
        recipe.append(f"s[{stage.name}].compute_at(s[{host.name}], {loop.name})")
        _store(stage, host, loop, rnd, recipe)
    _bound(stage, rnd, recipe)


def _store(stage: ts.Stage, host: ts.Stage, loop, rnd: random.Random, recipe: list) -> None:
    """Sometimes store ``stage`` (computed at ``host.loop``) further out: at a loop of ``host`` enclosing
    ``loop`` with only serial loops in between (a sliding window), or at the root (rejected when a loop
    around it runs in parallel)."""
    if rnd.random() >= 0.3:
        return
    leaves = host.leaf_iter_vars[:host.leaf_iter_vars.index(loop) + 1]
    serial = [v for k, v in enumerate(leaves)
              if not any(host.iter_var_attrs.get(w) in ("parallel", "vectorized") for w in leaves[k + 1:])]
    if rnd.random() < 0.25:
        stage.store_root()
        recipe.append(f"s[{stage.name}].store_root()")
    else:
        level = rnd.choice(serial)
        stage.store_at(host, level)
        recipe.append(f"s[{stage.name}].store_at(s[{host.name}], {level.name})")


def _bound(stage: ts.Stage, rnd: random.Random, recipe: list) -> None:
    """Sometimes bound an axis of ``stage`` to its whole (constant) extent: ``bound`` (the region every
    realization computes) or, for a stage computed at a loop, ``bound_extent`` (a constant-size region)."""
    axes = [(a, d) for a, d in zip(stage.op.axis, stage.op.output(0).shape) if isinstance(d, int)]
    if stage.attach_type == "inline" or not axes or rnd.random() >= 0.15:
        return
    axis, extent = rnd.choice(axes)
    if stage.attach_type == "scope" and rnd.random() < 0.5:
        stage.bound_extent(axis, extent)
        recipe.append(f"s[{stage.name}].bound_extent({axis.name}, {extent})")
    else:
        stage.bound(axis, 0, extent)
        recipe.append(f"s[{stage.name}].bound({axis.name}, 0, {extent})")


def draw(pipe: Pipeline, rnd: random.Random, recipe: list) -> ts.Schedule:
    """A random schedule of ``pipe``; every step is appended to ``recipe`` as text."""
    s = ts.create_schedule([t.op for t in pipe.outputs])
    if pipe.dataflow is not None:
        pipe.dataflow(s, rnd, recipe)
    stages = [st for st in s.stages if isinstance(st.op, ComputeOp)]
    for stage in reversed(stages):
        if not stage.is_output:
            _place(s, stage, rnd, recipe)
        if stage.attach_type != "inline":
            _transform_loops(stage, rnd, recipe)
            _annotate(stage, rnd, recipe)
    return s


def tolerance(want: np.ndarray) -> dict:
    if want.dtype.kind in "iub":
        return {"rtol": 0, "atol": 0}
    finite = np.abs(want[np.isfinite(want)])
    return {"rtol": 2e-4, "atol": 2e-4 * max(1.0, float(finite.max(initial=0.0)))}


def case_pipeline(n: int) -> tuple[Pipeline, random.Random]:
    rnd = random.Random(n * 7919 + 17)
    return rnd.choice(PIPELINES)(rnd), rnd


def describe_case(n: int) -> dict:
    return {"pipeline": case_pipeline(n)[0].name}


def run_case(n: int, verbose: bool = False) -> dict:
    pipe, rnd = case_pipeline(n)
    record: dict = {"pipeline": pipe.name}
    recipe: list[str] = []
    try:
        s = draw(pipe, rnd, recipe)
        start, cpu = time.perf_counter(), time.process_time()
        func = ts.lower(s, pipe.inputs + pipe.outputs, name="fuzz_schedule")
        record["lower_s"] = round(time.perf_counter() - start, 4)
        record["lower_cpu_s"] = round(time.process_time() - cpu, 4)
        record["slow"] = record["lower_cpu_s"] > SLOW_LOWERING_S
        if verbose:
            print("\n".join(recipe), "\n", func, sep="")
        kernel = ts.build(func)
        got = kernel(*pipe.arrays)
    except (ts.ScheduleError, ts.LoweringError) as err:
        return {**record, "status": "rejected", "detail": str(err).splitlines()[0], "recipe": recipe}
    except Exception as err:  # anything else is a bug of the compiler
        return {**record, "status": "error", "detail": describe(err), "recipe": recipe}
    got = list(got) if isinstance(got, tuple) else [got]
    for out, want in zip(got, pipe.reference(*pipe.arrays)):
        want = np.asarray(want).astype(out.dtype)
        if out.shape != want.shape or not np.allclose(out, want, equal_nan=True, **tolerance(want)):
            bad = np.argwhere(~np.isclose(out, want, equal_nan=True, **tolerance(want)))[:3].tolist()
            return {**record, "status": "wrong", "detail": f"outputs differ at {bad}", "recipe": recipe}
    return {**record, "status": "ok"}
