"""Loop kinds and loop hints of a stage: ``vectorize``, ``parallel``, ``unroll``, ``bind`` (a GPU index),
``specialize``, ``prefetch``, ``pragma`` and ``tensorize``.

Each records what was asked after checking its arguments (the loop is one of the stage's current loops,
the kind fits it); legality against dependences is checked when lowering. It does not build loops.
"""
from __future__ import annotations

from tesched.errors import ScheduleError
from tesched.schedule.kinds import LoopKind, ThreadAxis
from tesched.schedule.stage_base import StageBase, atomic, positive_int
from tesched.te.expr import Expr
from tesched.te.intrinsic import TensorIntrin
from tesched.te.scatter import ScatterOp
from tesched.te.update import UpdateOp
from tesched.te.tensor import IterType, IterVar, Tensor, TensorRead
from tesched.te.visit import walk


class LoopHints(StageBase):
    """The loop-kind and loop-hint primitives of a stage."""

    # loop kinds -----------------------------------------------------------------------------------
    @atomic
    def _annotate(self, ivar: IterVar, kind: LoopKind) -> None:
        primitive = {LoopKind.PARALLEL: "parallel", LoopKind.VECTORIZED: "vectorize", LoopKind.UNROLLED: "unroll"}[kind]
        self._compute_only(primitive)
        if not isinstance(ivar, IterVar) or ivar not in self.all_iter_vars:
            owner = next((st.name for st in self.schedule.stages if isinstance(ivar, IterVar)
                          and any(v is ivar for v in st.all_iter_vars)), None)
            raise ScheduleError(f"{primitive} on stage {self.name}: {getattr(ivar, 'name', ivar)!r} is not "
                                f"a loop of {self.name} (its loops are: {self._names(self.leaf_iter_vars)})"
                                + (f"; it is a loop of {owner}" if owner else ""))
        if kind is LoopKind.PARALLEL and self.mixes_reduction(ivar):
            raise ScheduleError(
                f"{primitive} on stage {self.name}: loop {ivar.name} fuses data-parallel and reduction loops "
                f"(a reduction loop), so consecutive iterations update the same {self.name} element; "
                "parallelize a data-parallel loop")
        # a scatter's or an update's loops are its points: the dependence check decides whether they may run
        # in parallel
        if kind is LoopKind.PARALLEL and ivar.iter_type == IterType.COMM_REDUCE \
                and not isinstance(self.op, (ScatterOp, UpdateOp)):
            raise ScheduleError(
                f"{primitive} on stage {self.name}: loop {ivar.name} runs over a reduction axis, so its "
                f"iterations all update the same {self.name} element (a loop-carried dependence); "
                f"parallelize a data-parallel loop, or rfactor the reduction first")
        if kind is LoopKind.VECTORIZED and self.mixes_reduction(ivar):
            raise ScheduleError(
                f"vectorize on stage {self.name}: loop {ivar.name} fuses data-parallel and reduction loops, so "
                f"its lanes would update different elements of {self.name} in turn; vectorize a loop that "
                "is only data-parallel or only a reduction")
        previous = self.iter_var_attrs.get(ivar)
        if previous not in (None, kind):
            was = self.thread_bindings[ivar].tag if ivar in self.thread_bindings else previous
            raise ScheduleError(f"{primitive} on stage {self.name}: loop {ivar.name} is already {was}")
        self.iter_var_attrs[ivar] = kind

    @atomic
    def bind(self, var: IterVar, thread_axis: ThreadAxis) -> None:
        """Run the iterations of loop ``var`` at once, one per GPU block or thread (TVM's ``bind``): for a
        GPU target (``build(..., target="opencl")``) the loop becomes the index ``thread_axis`` (from
        :func:`tesched.thread_axis`) and the launch geometry covers its extent; on a CPU target the loop
        runs in order. The dependence check refuses a loop that carries a dependence.

        Parameters
        ----------
        var : IterVar
            A data-parallel loop of this stage, or a reduction loop bound to a ``threadIdx``: a
            cross-thread reduction (TVM's), where each thread of the block accumulates a strided part of
            the loop and the block combines the partial results in shared memory (a tree of barriers).
        thread_axis : ThreadAxis
            ``ts.thread_axis("blockIdx.x")`` ... ``ts.thread_axis("threadIdx.z")``; each at most once per
            stage.

        Example
        -------
        >>> xo, xi = s[C].split(C.op.axis[0], factor=64)
        >>> s[C].bind(xo, ts.thread_axis("blockIdx.x"))
        >>> s[C].bind(xi, ts.thread_axis("threadIdx.x"))
        """
        self._check_leaf(var, "bind")
        if not isinstance(thread_axis, ThreadAxis):
            raise ScheduleError(f"bind on stage {self.name}, loop {var.name}: expected ts.thread_axis(...), got "
                                f"{type(thread_axis).__name__}")
        if self.mixes_reduction(var) or (var.iter_type == IterType.COMM_REDUCE
                                         and thread_axis.kind is not LoopKind.GPU_THREAD):
            raise ScheduleError(
                f"bind on stage {self.name}: loop {var.name} is a reduction loop bound to {thread_axis.tag}; its "
                f"iterations update the same {self.name} element and there is no cross-block reduction "
                "(nor one over a loop that also runs over data): bind it to a threadIdx (the threads of a "
                "block then combine their partial results), or rfactor the reduction first")
        other = next((v for v, a in self.thread_bindings.items() if a == thread_axis and v is not var), None)
        if other is not None:
            raise ScheduleError(f"bind on stage {self.name}: {thread_axis.tag} is already bound to loop "
                                f"{other.name}; bind {var.name} to another index")
        previous = self.iter_var_attrs.get(var)
        if previous is not None and (previous is not thread_axis.kind or self.thread_bindings[var] != thread_axis):
            was = self.thread_bindings[var].tag if var in self.thread_bindings else previous
            raise ScheduleError(f"bind on stage {self.name}: loop {var.name} is already {was}")
        self.iter_var_attrs[var] = thread_axis.kind
        self.thread_bindings = {**self.thread_bindings, var: thread_axis}

    def vectorize(self, var: IterVar) -> None:
        """SIMD over ``var``. On a reduction loop (innermost), lanes keep separate partial results that
        are combined after the loop (this reassociates a floating-point sum)."""
        self._annotate(var, LoopKind.VECTORIZED)

    def parallel(self, var: IterVar) -> None:
        """Run the iterations of loop ``var`` on several threads (an OpenMP parallel loop).

        Parameters
        ----------
        var : IterVar
            A data-parallel loop of this stage; the dependence check refuses one that carries a
            dependence, and a reduction loop must be ``rfactor``-ed first.

        Example
        -------
        >>> io, ii = s[C].split(C.op.axis[0], factor=32)
        >>> s[C].parallel(io)
        """
        self._annotate(var, LoopKind.PARALLEL)

    def unroll(self, var: IterVar) -> None:
        """Copy the body of loop ``var`` once per iteration (its extent must be a constant; after
        unrolling, small local buffers indexed by it can live in registers).

        Parameters
        ----------
        var : IterVar
            A loop of this stage with a constant extent (split with a constant factor first).
        """
        self._annotate(var, LoopKind.UNROLLED)

    @atomic
    def specialize(self, condition: Expr) -> None:
        """Add a fast path of this stage for when ``condition`` (on size variables, ``ts.var``) holds at
        run time (Halide's ``Func::specialize``): the stage's loop nest is generated twice, once knowing
        the condition, once not, and the kernel picks one when it runs. Knowing ``n % 16 == 0``, a split
        of ``n`` by 16 has no tail: no guard, no remainder loop, whole SIMD vectors. The schedule of both
        paths is the same. Conditions are comparisons of affine expressions of the sizes (``n % 16 == 0``,
        ``n >= 64``) joined by ``&``, ``|`` and ``~``; with several, the first that holds picks its path.
        The stage must be computed at the root (its loop nest is the unit that is duplicated).
        """
        self._compute_only("specialize")
        if not isinstance(condition, Expr) or condition.dtype != "bool":
            raise ScheduleError(f"specialize of {self.name}: the condition must be a comparison of size "
                                f"variables such as n % 16 == 0, got {condition!r}")
        loops = [v.name for v in walk(condition) if isinstance(v, IterVar)]
        reads = [n for n in walk(condition) if isinstance(n, TensorRead)]
        if loops or reads:
            what = f"loop variable {loops[0]}" if loops else f"a read of {reads[0].tensor.name}"
            raise ScheduleError(f"specialize of {self.name}: the condition uses {what}; it may only use size "
                                "variables (ts.var), known when the kernel is called")
        self.specializations = self.specializations + [condition]

    @atomic
    def prefetch(self, tensor: Tensor, var: IterVar, offset: int = 1) -> None:
        """At the start of each iteration of loop ``var``, prefetch into cache the region of ``tensor``
        that iteration ``var + offset`` will read (TVM's ``s[B].prefetch(tensor, var, offset)``, Halide's
        ``prefetch(func, var, offset)``): one ``__builtin_prefetch`` per cache line of the region, which
        comes from the exact footprint of this stage's reads (isl), so nothing outside it is touched. Nothing
        is prefetched past the loop's last iteration.

        Parameters
        ----------
        tensor : Tensor
            An input, or a stage computed at the root, that this stage reads.
        var : IterVar
            One of this stage's current loops.
        offset : int
            How many iterations ahead (1 or more).
        """
        self._check_leaf(var, "prefetch")
        if not isinstance(tensor, Tensor):
            raise ScheduleError(f"prefetch on stage {self.name}: expected the tensor to prefetch, got "
                                f"{type(tensor).__name__}")
        steps = positive_int(offset, f"prefetch offset of {self.name}.{var.name}")
        self.prefetches = self.prefetches + [(tensor, var, steps)]

    @atomic
    def pragma(self, var: IterVar, pragma_type: str, pragma_value: bool | int | None = None) -> None:
        """Attach a C loop hint to loop ``var`` (TVM's ``pragma``). Only these are accepted, and only
        their values reach C (never the text given):

        - ``"ivdep"`` (value True): ``#pragma GCC ivdep``, gcc may assume the iterations are independent.
          The dependence check verifies it: a loop that carries any dependence (a reduction loop
          included) is refused.
        - ``"unroll"`` (a count from 1 to 65535): ``#pragma GCC unroll count``, gcc unrolls the loop.
        - ``"unroll_explicit"`` (a bool): False keeps the loops marked ``unroll`` at or inside ``var`` as
          loops with ``#pragma GCC unroll`` (gcc unrolls them) instead of copying their bodies in the
          generated C; True (the default behaviour) copies them.
        - ``"vectorize"``, and ``"unroll"`` without a count: the loop kinds, as TVM turns these two
          pragmas into ``vectorize(var)`` and ``unroll(var)``.

        gcc has no per-loop unroll-and-jam pragma; write it as a schedule instead (checked by the
        dependence analysis): ``o, i = split(var, factor)``, ``reorder`` ``i`` inside the inner loops,
        then ``unroll(i)``.
        """
        self._check_leaf(var, "pragma")
        where = f"pragma on stage {self.name}, loop {var.name}"
        if pragma_type == "unroll_and_jam":
            raise ScheduleError(f"{where}: gcc has no unroll-and-jam loop pragma; write it as a schedule: "
                                f"split({var.name}, factor), reorder the inner part inside the inner loops, "
                                "unroll it")
        if pragma_type == "vectorize" and pragma_value is not None:
            raise ScheduleError(f"{where}: 'vectorize' takes no value (it makes the loop vectorized), got "
                                f"{pragma_value!r}")
        if pragma_type in ("vectorize", "unroll") and pragma_value is None:
            self._annotate(var, LoopKind.VECTORIZED if pragma_type == "vectorize" else LoopKind.UNROLLED)
            return
        if not isinstance(pragma_type, str) or pragma_type not in ("ivdep", "unroll", "unroll_explicit"):
            raise ScheduleError(f"{where}: unknown pragma {pragma_type!r}; the pragmas are 'ivdep', "
                                "'unroll' (a count, or none: unroll the loop), 'unroll_explicit' (a bool) and "
                                "'vectorize'")
        value: bool | int
        if pragma_type == "unroll":
            if isinstance(pragma_value, bool) or not isinstance(pragma_value, int) \
                    or not 1 <= pragma_value <= 65535:
                raise ScheduleError(f"{where}: 'unroll' needs a count from 1 to 65535, got {pragma_value!r}")
            value = pragma_value
        else:
            default = True if pragma_type == "ivdep" else None
            value_given = default if pragma_value is None else pragma_value
            if not isinstance(value_given, bool) or (pragma_type == "ivdep" and value_given is not True):
                want = "True" if pragma_type == "ivdep" else "a bool"
                raise ScheduleError(f"{where}: {pragma_type!r} takes {want}, got {pragma_value!r}")
            value = value_given
        self.pragmas = {**self.pragmas, var: {**self.pragmas.get(var, {}), pragma_type: value}}

    @atomic
    def tensorize(self, var: IterVar, tensor_intrin) -> None:
        """Replace loop ``var`` and every loop inside it by a call of ``tensor_intrin`` (see
        :mod:`tesched.poly.tensorize`); the match is checked when lowering."""
        self._check_leaf(var, "tensorize")
        if not isinstance(tensor_intrin, TensorIntrin):
            raise TypeError("tensorize: the intrinsic must come from ts.decl_tensor_intrin")
        self.tensorize_spec = (var, tensor_intrin)
