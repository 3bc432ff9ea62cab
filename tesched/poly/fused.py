"""Fused loops whose value is not affine: ``fuse(i, j)`` where ``j`` runs over a symbolic size ``n``.

The fused loop's value ``i * n + j`` is a parameter times a variable, which isl cannot represent. Such a
fuse stays out of the polyhedral model: the stage is modelled over the loops it fuses (its *components*,
``i`` then ``j``), whose lexicographic order is the fused loop's order, so footprints, dependences and
the loop nest isl generates are those of the fused loop. A :class:`FusedGroup` remembers the fuse (and a
split of the fused loop by a constant factor, if any); after AST generation :mod:`.collapse` turns the
component loops into the one loop the user asked for (``fused`` over the product of their extents, each
component recovered by ``//`` and ``%``, as TVM and Halide do) when its kind or hints need it, and keeps
them nested when the fused loop is plain serial (the same order, without the divisions).

The dependence check judges every component loop with the group's strongest kind (a ``parallel`` fused
loop carries no dependence iff none of its components does, with the outer ones fixed); for a split of
the fused loop this is conservative: both pieces must carry none.
"""
from __future__ import annotations

from dataclasses import dataclass

from tesched.errors import ScheduleError
from tesched.ir.kinds import LoopKind
from tesched.schedule.stage import Fuse, Split, Stage
from tesched.te.tensor import IterType, IterVar

Pragmas = tuple[tuple[str, bool | int], ...]


@dataclass(frozen=True, eq=False)
class FusedGroup:
    """A fuse kept out of the model: the user's ``fused`` loop, the model loops it stands for
    (``components``, outermost first), and the user's loops it became (``pieces``: the fused loop, or
    the outer and inner loops of its split by ``factor``) with their kinds and C loop hints."""

    stage: str
    fused: IterVar
    components: tuple[IterVar, ...]
    pieces: tuple[IterVar, ...]
    factor: int | None
    kinds: tuple[LoopKind, ...]
    pragmas: tuple[Pragmas, ...]
    origins: tuple[str, ...]

    @property
    def plain(self) -> bool:
        """Whether every piece is a serial loop without hints: the nested components run in its order."""
        return all(k is LoopKind.SERIAL for k in self.kinds) and not any(self.pragmas)

    @property
    def check_kind(self) -> LoopKind:
        """The kind the dependence check gives every component (the strongest of the pieces')."""
        for kind in (LoopKind.PARALLEL, LoopKind.VECTORIZED):
            if kind in self.kinds:
                return kind
        return LoopKind.SERIAL

    @property
    def check_pragmas(self) -> Pragmas:
        """``ivdep`` when a piece has it (the dependence check verifies it on every component)."""
        return (("ivdep", True),) if any(("ivdep", True) in p for p in self.pragmas) else ()

    def describe(self) -> str:
        """``i.j.fused (the fuse of i, j)`` for messages."""
        return f"{self.fused.name} (the fuse of {', '.join(v.name for v in self.components)})"


def _expansions(st: Stage, extent: dict[int, int | None]) -> dict[int, list[IterVar]]:
    """The fused loops whose value is not affine, each with the model loops it stands for."""
    out: dict[int, list[IterVar]] = {}
    for rel in st.relations:
        if isinstance(rel, Fuse) and (extent.get(id(rel.inner)) is None or id(rel.outer) in out
                                      or id(rel.inner) in out):
            out[id(rel.fused)] = out.get(id(rel.outer), [rel.outer]) + out.get(id(rel.inner), [rel.inner])
    return out


def fused_groups(st: Stage, extent: dict[int, int | None]) -> tuple[list[IterVar], list[FusedGroup], set[int]]:
    """The loops the model gives ``st`` (its leaves, with every non-affine fuse replaced by the loops it
    fuses), the fuses so replaced, and the ids of every loop variable kept out of the model (non-affine
    fuses, intermediate ones included, and the parts of their splits). Raises ScheduleError for what the
    replacement cannot express."""
    expanded = _expansions(st, extent)
    if not expanded:
        return list(st.leaf_iter_vars), [], set()
    splits: dict[int, Split] = {}
    for rel in st.relations:
        if isinstance(rel, Split) and id(rel.parent) in expanded:
            splits[id(rel.parent)] = rel
    pieces = {id(v) for rel in splits.values() for v in (rel.outer, rel.inner)}
    for rel in st.relations:
        used = [rel.parent] if isinstance(rel, Split) else [rel.outer, rel.inner] if isinstance(rel, Fuse) else []
        bad = next((v for v in used if id(v) in pieces), None)
        if bad is not None:
            fused = next(r.parent for r in splits.values() if bad in (r.outer, r.inner))
            raise ScheduleError(f"{'split' if isinstance(rel, Split) else 'fuse'} of {st.name}.{bad.name}: "
                                f"{bad.name} comes from splitting {fused.name}, a fuse over a symbolic extent "
                                "(its value is not affine); such a fused loop can be split once, by a "
                                "constant factor, and its two parts not split or fused again")
    leaves: list[IterVar] = []
    groups: list[FusedGroup] = []
    user = st.leaf_iter_vars
    k = 0
    while k < len(user):
        v = user[k]
        if id(v) in expanded and id(v) not in splits:
            groups.append(_group(st, v, expanded[id(v)], (v,), None))
            leaves += expanded[id(v)]
        elif id(v) in pieces:
            rel = next(r for r in splits.values() if v in (r.outer, r.inner))
            if v is not rel.outer or k + 1 >= len(user) or user[k + 1] is not rel.inner:
                raise ScheduleError(
                    f"stage {st.name}: loops {rel.outer.name} and {rel.inner.name} split {rel.parent.name}, a "
                    "fuse over a symbolic extent (not affine), so they must stay next to each other, outer "
                    f"first; the order is {', '.join(x.name for x in user)}")
            groups.append(_group(st, rel.parent, expanded[id(rel.parent)], (rel.outer, rel.inner),
                                 st.split_factor(rel)))
            leaves += expanded[id(rel.parent)]
            k += 1
        else:
            leaves.append(v)
        k += 1
    return leaves, groups, set(expanded) | pieces


def _group(st: Stage, fused: IterVar, components: list[IterVar], pieces: tuple[IterVar, ...],
           factor: int | None) -> FusedGroup:
    kinds = tuple(st.iter_var_attrs.get(p, LoopKind.SERIAL) for p in pieces)
    what = f"{fused.name} (the fuse of {', '.join(v.name for v in components)} on stage {st.name})"
    if len({v.iter_type for v in components}) > 1:
        raise ScheduleError(f"fuse {what}: it fuses data-parallel and reduction loops over a symbolic extent; "
                            "the reduction's initialisation would have to run between them. Fuse loops of "
                            "one kind, or split the symbolic loop by a constant factor and fuse its inner part")
    reduce = components[0].iter_type is IterType.COMM_REDUCE
    for p, kind in zip(pieces, kinds):
        if kind is LoopKind.UNROLLED:
            raise ScheduleError(f"unroll of {st.name}.{p.name}: it comes from {what}, whose extent is symbolic: "
                                "its trip count is known only at run time (the last block of a split is "
                                "partial); unroll a loop of constant extent instead")
        if reduce and kind is LoopKind.VECTORIZED:
            raise ScheduleError(f"vectorize of {st.name}.{p.name}: it comes from {what}, a fuse of reduction "
                                "loops over a symbolic extent, whose lanes would accumulate into one element; "
                                "vectorize a data-parallel loop")
    pragmas = tuple(tuple(sorted(st.pragmas.get(p, {}).items())) for p in pieces)
    return FusedGroup(st.name, fused, tuple(components), pieces, factor, kinds, pragmas,
                      tuple(st.loop_origin(p) for p in pieces))
