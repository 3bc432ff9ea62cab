"""Where a stage is computed and stored: ``compute_at``, ``compute_inline``, ``compute_root``,
``store_at``, ``store_root``, ``bound``, ``bound_extent``, ``align_bounds``, and the layout of its buffer (``storage_align``,
``reorder_storage``, ``fold_storage``).

Each checks its arguments (the parent is a stage of the same schedule that reads this one, the loop is
one of its loops, no cycle) and records the placement; the region computed per iteration comes from the
polyhedral footprint when lowering (:mod:`tesched.poly`).
"""
from __future__ import annotations

from tesched.errors import ScheduleError
from tesched.schedule.kinds import AttachType
from tesched.schedule.stage_base import StageBase, atomic, positive_int
from tesched.schedule.storage import checked_bound
from tesched.te.extern_op import ExternOp
from tesched.te.tensor import ComputeOp, IterVar


class Placement(StageBase):
    """The placement primitives of a stage."""

    # placement ------------------------------------------------------------------------------------
    def _check_placement(self, primitive: str, parent: StageBase, scope: object) -> None:
        """Check that loop ``scope`` of ``parent`` can hold this stage (``compute_at``/``store_at``)."""
        if not isinstance(parent, StageBase) or parent.schedule is not self.schedule:
            raise ScheduleError(f"{primitive} of {self.name}: the parent must be a stage of the same "
                                "schedule, e.g. s[consumer]")
        where = f"{parent.name}.{getattr(scope, 'name', scope)}"
        if parent is self:
            raise ScheduleError(f"{primitive} of {self.name} at {where}: a stage cannot be computed or "
                                "stored inside itself")
        if isinstance(parent.op, ExternOp):
            raise ScheduleError(f"{primitive} of {self.name} at {where}: {parent.name} is an extern stage, one call "
                                f"of C function {parent.op.function} with no loops to compute inside")
        if self.is_output:
            raise ScheduleError(f"{primitive} of {self.name} at {where}: it is an output of the schedule; "
                                "outputs are computed and stored at the root")
        if not isinstance(scope, IterVar) or scope not in parent.all_iter_vars:
            owner = next((st.name for st in self.schedule.stages if isinstance(scope, IterVar)
                          and any(v is scope for v in st.all_iter_vars)), None)
            belongs = f"; it is a loop of {owner}" if owner else ""
            raise ScheduleError(f"{primitive} of {self.name}: {getattr(scope, 'name', scope)!r} is not a "
                                f"loop of {parent.name} (its loops are: "
                                f"{parent._names(parent.leaf_iter_vars)}){belongs}")
        if not self.schedule.reads_transitively(parent.op, self.op):
            readers = [st.name for st in self.schedule.stages if self in self.schedule.producers(st)]
            raise ScheduleError(f"{primitive} of {self.name} at {parent.name}.{scope.name}: {parent.name} "
                                f"does not read {self.name}, so no loop of {parent.name} is a legal "
                                f"place; stages that read it: {', '.join(readers) or 'none'}")
        enclosing: StageBase | None = parent
        while enclosing is not None and enclosing.attach_type is AttachType.SCOPE:
            if enclosing.attach_stage is self:
                raise ScheduleError(f"{primitive} of {self.name} at {parent.name}.{scope.name}: "
                                    f"{parent.name} is itself computed inside {self.name} (a cycle)")
            enclosing = enclosing.attach_stage

    @atomic
    def compute_at(self, parent: StageBase, scope: IterVar) -> None:
        """Compute this stage inside loop ``scope`` of ``parent``: per iteration of that loop, exactly
        the region the loop's body reads (its polyhedral footprint), into a buffer local to it (or to
        the loop given to :meth:`store_at`)."""
        self._compute_only("compute_at")
        self._check_placement("compute_at", parent, scope)
        self.attach_type, self.attach_stage, self.attach_ivar = AttachType.SCOPE, parent, scope

    @atomic
    def compute_with(self, parent: StageBase, scope: IterVar) -> None:
        """Run this stage's loops fused with ``parent``'s, from the outermost down to ``parent``'s loop
        ``scope`` (Halide's ``compute_with``): this stage's loop at each of those depths is ``parent``'s,
        and per iteration of the innermost of them, ``parent``'s body runs, then this stage's. Both stay
        computed at the root; the fused loops are data-parallel and run as ``parent`` marks them. The
        dependence check refuses a fusion that reads a value before it is written (this stage reading
        ``parent`` ahead of the fused loop, or ``parent`` reading this stage), or a parallel fused loop
        that carries a dependence."""
        self._compute_only("compute_with")
        if not isinstance(parent, StageBase) or parent.schedule is not self.schedule or parent is self:
            raise ScheduleError(f"compute_with of {self.name}: the parent must be another stage of the same "
                                "schedule, e.g. s[f]")
        if not isinstance(scope, IterVar) or scope not in parent.leaf_iter_vars:
            raise ScheduleError(f"compute_with of {self.name}: {getattr(scope, 'name', scope)!r} is not a loop of "
                                f"{parent.name} (its loops are: {parent._names(parent.leaf_iter_vars)})")
        self.with_stage, self.with_ivar = parent, scope

    @atomic
    def store_at(self, parent: StageBase, scope: IterVar) -> None:
        """Allocate this stage's buffer inside loop ``scope`` of ``parent``, at or outside the loop it is
        computed at (Halide's ``store_at``).

        The iterations of the loops between the storage level and the ``compute_at`` level share the
        buffer: each computes only the part of its region that earlier iterations have not computed (a
        sliding window), so those loops must run in order (not ``parallel`` or ``vectorize``). Where the
        region slides along a dimension within a bounded window, the buffer keeps only a power-of-two
        number of slices along it (a circular buffer, indexed modulo its size).

        Parameters
        ----------
        parent : Stage
            The stage whose loop holds the buffer (the ``compute_at`` stage or one enclosing it).
        scope : IterVar
            A loop of ``parent`` enclosing the ``compute_at`` loop (or that loop itself).

        Example
        -------
        >>> s[blur_x].compute_at(s[blur_y], y)      # computed per row of blur_y...
        >>> s[blur_x].store_at(s[blur_y], yo)       # ...reusing rows within each strip yo
        """
        self._compute_only("store_at")
        self._check_placement("store_at", parent, scope)
        self.store_type, self.store_stage, self.store_ivar = AttachType.SCOPE, parent, scope

    @atomic
    def store_root(self) -> None:
        """Allocate this stage's buffer outside every loop (Halide's ``store_root``); with ``compute_at``
        the rows (slices) computed by earlier iterations are reused, see :meth:`store_at`."""
        self._compute_only("store_root")
        self.store_type, self.store_stage, self.store_ivar = AttachType.ROOT, None, None

    @atomic
    def bound(self, axis: IterVar, min: int, extent: int) -> None:
        """Realize exactly ``[min, min + extent)`` of ``axis`` (Halide's ``bound``).

        A stage computed at the root computes only that part of its tensor; a stage computed at a loop
        computes that range of ``axis`` at every iteration. A reader needing more of it, or an output
        whose whole dimension is not that range, raises ``ScheduleError``.

        Parameters
        ----------
        axis : IterVar
            One of the stage's own axes (``s[T].op.axis[k]``), not a reduce axis or a split loop.
        min, extent : int
            The first index realized and how many.
        """
        self._compute_only("bound")
        self.bounds[axis] = checked_bound(self.name, self.op, self.is_output, axis, min, extent, "bound")

    @atomic
    def bound_extent(self, axis: IterVar, extent: int) -> None:
        """Realize ``extent`` points of ``axis``, from where the readers' region starts (Halide's
        ``bound_extent``): a stage computed at a loop gets a constant-size region per iteration; a reader
        needing more than ``extent`` points raises ``ScheduleError``."""
        self._compute_only("bound_extent")
        self.bounds[axis] = checked_bound(self.name, self.op, self.is_output, axis, None, extent, "bound_extent")

    @atomic
    def align_bounds(self, axis: IterVar, modulus: int, remainder: int = 0) -> None:
        """Widen the region of ``axis`` this stage computes per iteration of the loop it is computed at so
        that it starts at a multiple of ``modulus`` plus ``remainder`` and spans a multiple of ``modulus``
        (Halide's ``align_bounds``): e.g. whole vectors, or the even pixels a 2x downsampling reads. The
        widened region always holds the one needed, and is cut to the tensor's own domain. A stage
        computed at the root computes its whole tensor, which this leaves as it is.

        Parameters
        ----------
        axis : IterVar
            One of the stage's own axes (``s[T].op.axis[k]``), not one fixed by ``bound``.
        modulus : int
            The alignment, at least 1.
        remainder : int
            The region's start modulo ``modulus`` (taken modulo it).
        """
        self._compute_only("align_bounds")
        self._storage_dim("align_bounds", axis)
        step = positive_int(modulus, f"align_bounds modulus of {self.name}.{axis.name}")
        if isinstance(remainder, bool) or not isinstance(remainder, int):
            raise ScheduleError(f"align_bounds remainder of {self.name}.{axis.name} must be an int, got {remainder!r}")
        if axis in self.bounds:
            raise ScheduleError(f"align_bounds of {self.name}.{axis.name}: the axis is bound to "
                                f"{self.bounds[axis].describe()} (bound, bound_extent), which fixes its region")
        self.bound_alignments = {**self.bound_alignments, axis: (step, remainder % step)}

    @atomic
    def compute_inline(self) -> None:
        """Substitute this stage's expression into every reader; it gets no loops or buffer."""
        self._compute_only("compute_inline")
        if self.is_output:
            raise ScheduleError(f"compute_inline of {self.name}: it is an output of the schedule")
        if isinstance(self.op, ComputeOp) and self.op.reduce_axis:
            raise ScheduleError(f"compute_inline of {self.name}: it is a reduction (over "
                                f"{self._names(self.op.reduce_axis)}); only elementwise stages can be "
                                "inlined, use compute_at instead")
        self.attach_type, self.attach_stage, self.attach_ivar = AttachType.INLINE, None, None

    @atomic
    def compute_root(self) -> None:
        """Compute (and store) this stage in full, at the outermost level, before its readers."""
        self._compute_only("compute_root")
        self.attach_type, self.attach_stage, self.attach_ivar = AttachType.ROOT, None, None
        self.store_type, self.store_stage, self.store_ivar = None, None, None

    @atomic
    def storage_align(self, axis: IterVar, factor: int, offset: int) -> None:
        """Pad the stride of dimension ``axis`` of this stage's buffer so that it is ``k * factor + offset``
        for some ``k`` (TVM's ``storage_align``), the smallest such stride no less than the dense one.
        With ``axis`` the rows of a tile whose row length is a multiple of the cache's set stride,
        ``offset=1`` puts consecutive rows in different cache sets (no conflict misses when a column is
        read). For a buffer tesched allocates: an intermediate or a ``compute_at`` buffer of constant shape
        (a cache stage); a kernel argument keeps the array's layout and is refused when lowering.

        Parameters
        ----------
        axis : IterVar
            An axis of this stage's computation (``s[T].op.axis[d]``).
        factor : int
            The stride is a multiple of ``factor`` plus ``offset`` (elements).
        offset : int
            From 0 to ``factor - 1``.
        """
        self._compute_only("storage_align")
        axes = list(getattr(self.op, "axis", []))
        if not isinstance(axis, IterVar) or not any(a is axis for a in axes):
            raise ScheduleError(f"storage_align of {self.name}: {getattr(axis, 'name', axis)!r} is not an axis of "
                                f"{self.name} (its axes are: {self._names(axes)}); give s[{self.name}].op.axis[d]")
        dim = next(d for d, a in enumerate(axes) if a is axis)
        step = positive_int(factor, f"storage_align factor of {self.name}.{axis.name}")
        if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset < step:
            raise ScheduleError(f"storage_align offset of {self.name}.{axis.name} must be an int from 0 to "
                                f"{step - 1}, got {offset!r}")
        self.storage_aligns = {**self.storage_aligns, dim: (step, offset)}

    def _storage_dim(self, primitive: str, axis: object) -> int:
        """The dimension of this stage's buffer that ``axis`` (one of ``op.axis``) indexes."""
        axes = list(getattr(self.op, "axis", []))
        if not isinstance(axis, IterVar) or not any(a is axis for a in axes):
            raise ScheduleError(f"{primitive} of {self.name}: {getattr(axis, 'name', axis)!r} is not an axis of "
                                f"{self.name} (its axes are: {self._names(axes)}); give s[{self.name}].op.axis[d]")
        return next(d for d, a in enumerate(axes) if a is axis)

    @atomic
    def reorder_storage(self, *axes: IterVar) -> None:
        """Lay out this stage's buffer with the dimensions of ``axes`` in the given order, outermost first
        (as :meth:`reorder` orders loops; Halide's ``reorder_storage`` lists them innermost first). The
        listed dimensions take the places they held among themselves; the others keep theirs. What the
        stage and its readers compute is unchanged; the strides are. For a buffer tesched allocates (an
        intermediate or a ``compute_at`` buffer): a kernel argument keeps the array's layout.

        Parameters
        ----------
        *axes : IterVar
            Two or more distinct axes of this stage's computation (``s[T].op.axis[d]``).
        """
        self._compute_only("reorder_storage")
        dims = [self._storage_dim("reorder_storage", a) for a in axes]
        if len(dims) < 2 or len(set(dims)) != len(dims):
            raise ScheduleError(f"reorder_storage of {self.name}: give two or more distinct axes, got "
                                f"{', '.join(getattr(a, 'name', str(a)) for a in axes) or 'none'}")
        order = list(self.storage_order or range(len(self.op.axis)))
        places = sorted(order.index(d) for d in dims)
        for place, d in zip(places, dims):
            order[place] = d
        self.storage_order = None if order == sorted(order) else tuple(order)

    @atomic
    def fold_storage(self, axis: IterVar, factor: int) -> None:
        """Keep ``factor`` slices of this stage's buffer along ``axis``, index taken modulo ``factor`` (a
        circular buffer, Halide's ``fold_storage``), in place of the power of two tesched chooses on its
        own. For a stage stored outside the loop it is computed at (``store_root`` or ``store_at`` with
        ``compute_at``); lowering checks with isl that no slice is overwritten while a later iteration
        still reads it, and otherwise names the smallest fold that is safe.

        Parameters
        ----------
        axis : IterVar
            An axis of this stage's computation (``s[T].op.axis[d]``).
        factor : int
            The slices kept, at least the window each iteration reads.
        """
        self._compute_only("fold_storage")
        dim = self._storage_dim("fold_storage", axis)
        step = positive_int(factor, f"fold_storage factor of {self.name}.{axis.name}")
        if self.storage_folds and dim not in self.storage_folds:
            raise ScheduleError(f"fold_storage of {self.name}.{axis.name}: dimension "
                                f"{self.op.axis[next(iter(self.storage_folds))].name} is already folded; "
                                "a buffer folds along one dimension")
        self.storage_folds = {dim: step}
