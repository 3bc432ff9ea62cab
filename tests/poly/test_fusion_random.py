"""Random schedules of a small ``pad -> conv -> relu -> pad -> conv`` pipeline: each either builds a kernel
that equals NumPy or raises ``ts.ScheduleError``, never anything else.

A :class:`Plan` is drawn by hypothesis: conv2's tile sizes (dividing or not), an order of its loops,
where conv1, relu and the two pads are computed (inlined, at the root, or at a loop of a stage that reads
them, legal or not), and parallel/vectorize/unroll marks on any loop of any stage, reduction loops
included. Kernels go to a cache private to the test session.
"""
from __future__ import annotations

from dataclasses import dataclass

from conv_helpers import ConvChain, ConvLayer, check_chain, declare_conv_chain
from hypothesis import HealthCheck, event, example, given, note, settings
from hypothesis import strategies as st

import tesched as ts

CONV2_SPATIAL_LOOPS = ("n", "f", "y.outer", "x.outer", "y.inner", "x.inner")
CONV2_REDUCE_LOOPS = ("rc", "ry", "rx")
CONV2_LOOPS = CONV2_SPATIAL_LOOPS + CONV2_REDUCE_LOOPS
CONV1_LOOPS = ("n", "f", "y", "x", "rc", "ry", "rx")
ELEMENTWISE_LOOPS = ("n", "c", "y", "x")
KINDS = ("parallel", "vectorize", "unroll")


@dataclass(frozen=True)
class Plan:
    """One random schedule. Placements are ``inline``, ``root``, or ``<stage>:<loop>``."""

    size: int
    stride: int                     # conv2's stride
    tile: tuple[int, int]           # conv2's (y, x) tile
    order: tuple[str, ...]          # conv2's loops, outermost first
    conv1: str
    relu: str
    pad1: str
    pad2: str
    marks: tuple[tuple[str, str, str], ...]    # (stage, loop, kind)


def loops_of(stage: str) -> tuple[str, ...]:
    return {"conv2": CONV2_LOOPS, "conv1": CONV1_LOOPS}.get(stage, ELEMENTWISE_LOOPS)


def placements(readers: tuple[str, ...], inline: bool) -> st.SearchStrategy[str]:
    at = st.sampled_from([f"{stage}:{loop}" for stage in readers for loop in loops_of(stage)])
    return st.one_of(st.sampled_from(("inline", "root") if inline else ("root",)), at)


@st.composite
def plans(draw) -> Plan:
    size = draw(st.integers(6, 11))
    marks = draw(st.lists(st.sampled_from(("conv1", "relu1", "pad1", "pad2", "conv2")).flatmap(
        lambda stage: st.tuples(st.just(stage), st.sampled_from(loops_of(stage)), st.sampled_from(KINDS))),
        max_size=3))
    return Plan(
        size=size,
        stride=draw(st.sampled_from((1, 2))),
        tile=(draw(st.integers(1, size + 1)), draw(st.integers(1, size + 1))),
        order=tuple(draw(st.permutations(CONV2_SPATIAL_LOOPS + CONV2_REDUCE_LOOPS))),
        conv1=draw(placements(("conv2",), inline=False)),
        relu=draw(placements(("conv2",), inline=True)),
        pad1=draw(placements(("conv1", "conv2"), inline=True)),
        pad2=draw(placements(("conv2",), inline=True)),
        marks=tuple(marks),
    )


def declare(plan: Plan) -> ConvChain:
    return declare_conv_chain(2, plan.size, [ConvLayer(3, relu=True), ConvLayer(2, stride=plan.stride)])


def apply(plan: Plan, chain: ConvChain) -> ts.Schedule:
    """The schedule ``plan`` describes; primitives raise ScheduleError as soon as one is refused."""
    s = ts.create_schedule(chain.output.op)
    tensors = {"conv1": chain.convs[0], "relu1": chain.relus[0], "pad1": chain.pads[0],
               "pad2": chain.pads[1], "conv2": chain.convs[1]}
    conv2 = s[tensors["conv2"]]
    _, _, y, x = conv2.op.axis
    conv2.tile(y, x, *plan.tile)

    def loop(stage: str, name: str) -> ts.IterVar:
        return next(v for v in s[tensors[stage]].leaf_iter_vars if v.name == name)

    conv2.reorder(*[loop("conv2", name) for name in plan.order])
    for name in ("conv1", "relu1", "pad1", "pad2"):
        where = {"conv1": plan.conv1, "relu1": plan.relu, "pad1": plan.pad1, "pad2": plan.pad2}[name]
        if where == "inline":
            s[tensors[name]].compute_inline()
        elif where != "root":
            parent, loop_name = where.split(":")
            s[tensors[name]].compute_at(s[tensors[parent]], loop(parent, loop_name))
    for stage, loop_name, kind in plan.marks:
        getattr(s[tensors[stage]], kind)(loop(stage, loop_name))
    return s


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=plans())
@example(plan=Plan(size=6, stride=1, tile=(2, 2),      # a select's read of a stack array, once miscompiled
                   order=("n", "x.inner", "y.outer", "x.outer", "y.inner", "f", "rc", "ry", "rx"),
                   conv1="root", relu="root", pad1="inline", pad2="conv2:y.outer",
                   marks=(("pad2", "y", "vectorize"),)))
@example(plan=Plan(size=6, stride=1, tile=(6, 2),      # a select's read of a stack array, once miscompiled
                   order=("n", "x.inner", "y.outer", "rx", "rc", "x.outer", "ry", "y.inner", "f"),
                   conv1="root", relu="conv2:y.outer", pad1="inline", pad2="conv2:y.outer",
                   marks=(("conv2", "x.outer", "vectorize"),)))
def test_random_schedule_builds_a_correct_kernel_or_raises_schedule_error(plan: Plan, isolated_cache):
    chain = declare(plan)
    try:
        kernel = ts.build(apply(plan, chain), chain.args, name="random_fusion")
    except ts.ScheduleError as err:
        event("refused")
        note(f"refused: {err}")
        return
    event("built")
    note(str(kernel.lowered))
    check_chain(kernel, chain, seed=plan.size)
