"""Lowering of extern stages (``ts.extern``): one call of the user's C function in place of the loops.

An :class:`~tesched.te.extern_op.ExternOp` is modelled as a stage over its output's axes whose body reads
every input whole (:class:`~tesched.te.extern_op.WholeIndex`), so the dependence analysis and the bounds
of its producers see the call's true footprint. :func:`extern_match` checks the schedule around it (the
stage at the root and unscheduled, its inputs not inlined) and returns a tensorize match at its outermost
loop with no regions: the tensorize phase (:mod:`.tensorize`) then puts one call statement in place of
the whole nest. :func:`extern_call` writes that call: a pointer to each tensor argument's whole buffer
(which must be dense row-major, not a ``compute_at`` region, folded or bounded) and the sizes as int64.
The C text of the function reaches the kernel as that of ``call_pure_extern`` does
(:mod:`tesched.codegen.extern`). This module does no matching of loop nests.
"""
from __future__ import annotations

from tesched.ir import nodes as ir
from tesched.errors import ScheduleError
from tesched.poly.model import PolyModel, StageModel, TensorizeMatch
from tesched.schedule.kinds import AttachType
from tesched.te.expr import Const, Expr, cast_to
from tesched.te.extern_op import ExternOp
from tesched.te.intrinsic import CIntrinsic, TensorIntrin
from tesched.te.tensor import Tensor


def extern_match(model: PolyModel, sm: StageModel) -> TensorizeMatch:
    """The call of extern stage ``sm`` in place of all its loops; ScheduleError naming the stage when the
    schedule computes it anywhere but at the root, changes its loops, or inlines one of its inputs."""
    op = sm.op
    assert isinstance(op, ExternOp), f"{sm.name} is not an extern stage"
    st = sm.stage
    what = f"extern stage {sm.name} (C function {op.function})"
    if sm.parent is not None or st.relations or st.iter_var_attrs or st.pragmas or st.bounds \
            or st.tensorize_spec is not None or sm.realized is not None:
        raise ScheduleError(f"{what}: it is computed by one call, at the root; its loops cannot be scheduled")
    for t in op.input_tensors:
        producer = model.schedule.stage_of_tensor(t)
        if producer is not None and producer.attach_type is AttachType.INLINE:
            raise ScheduleError(f"{what} reads {t.name} whole, so {t.name} cannot be inlined; compute it at "
                                "the root")
    intrin = TensorIntrin(op, CIntrinsic("", body=op.function), op.name)
    return TensorizeMatch(intrin, 0, "body", [])


def extern_call(op: ExternOp, intrin: TensorIntrin, buffers: dict[int, ir.Buffer]) -> ir.IntrinsicCall:
    """The C call filling ``op``'s output: each tensor argument as a pointer to its whole buffer, each
    size expression as an int64."""
    args: list[Expr] = []
    for a in op.call_args:
        if isinstance(a, Tensor):
            buf = buffers[id(a)]
            _check_whole(op, a, buf)
            args.append(ir.Address(buf, [Const(0, "int64")] * len(buf.shape)))
        else:
            args.append(cast_to(a, "int64"))
    return ir.IntrinsicCall(op.function, args, intrin)


def _check_whole(op: ExternOp, tensor: Tensor, buf: ir.Buffer) -> None:
    """``buf`` holds all of ``tensor``, dense and row-major (what the C function is given)."""
    whole = buf.scope is not ir.BufferScope.LOCAL and not buf.folds and buf.row_major \
        and all(a is b or (isinstance(a, int) and a == b) for a, b in zip(buf.shape, tensor.shape))
    if not whole:
        raise ScheduleError(f"extern stage {op.name} (C function {op.function}) is given {tensor.name} as a whole "
                            f"dense row-major array, but the schedule stores {tensor.name} otherwise (computed at "
                            "a loop, bounded, folded, aligned or reordered); compute it at the root with its "
                            "default storage")
