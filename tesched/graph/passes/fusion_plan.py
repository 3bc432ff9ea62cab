"""The grouping behind ``fuse_ops``: which op calls share a kernel, and what the report says about it.

Every op call starts as a group of its own. Visiting calls producers-first, each edge producer -> consumer
merges the producer's group into the consumer's unless, in this order:

1. an ``annotation.stop_fusion`` sits on the edge;
2. either op is in ``rules.never_fuse``, or is a ``reshape`` (a view, which needs no kernel);
3. the consumer group's pattern may not follow the producer group's (``rules.may_follow``), except two
   anchors side by side whose results meet in an elementwise op, under ``rules.combine_anchors``, a
   ``strided_slice`` of an anchor's group under ``rules.slice_anchors``, and a convolution reading a group
   of one convolution under ``rules.conv_chains``;
4. the merged group would exceed ``rules.max_group_size``;
5. the producer's value is also read outside the merged group, and ``rules.shared_values`` is
   ``"separate"``; otherwise the groups merge and the value becomes one more output of the group (kept,
   computed once), or, under ``"recompute"`` when the producer's group is cheap, the producer's group is
   copied into the consumer's (recomputed there; the original stays for the other readers);
6. the merged group would be part of a cycle (a value leaving it and coming back through another group);
   under ``"auto"`` a cheap producer's group is then recomputed instead.

Groups are sets of calls with any number of outputs: every member read outside its group is an output.
A recomputed copy is never an output. This module plans; :mod:`.fuse_ops` rewrites the graph.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeGuard

from tesched.graph.annotation import STOP_FUSION
from tesched.graph.fusion_rules import FusionRules
from tesched.graph.ir import Call, Expr, Function, Tuple
from tesched.graph.text import numbering
from tesched.graph.visit import post_order
from tesched.nn.pattern import Pattern

RESULT = -1
"""Stands for the function's result among the consumers of a value."""

_CHEAP = (Pattern.ELEMWISE, Pattern.BROADCAST, Pattern.INJECTIVE)

SIDE_BY_SIDE_ANCHORS = ("nn.dense", "nn.dense_panels", "nn.matmul")
"""Anchors ``combine_anchors`` may put in one group: small matrix products (a recurrent cell's two) gain
a kernel launch; two convolutions (a residual branch and its shortcut) would only share a kernel whose
second convolution is stored whole, and the default schedules handle that badly."""

CHAINED_ANCHORS = ("nn.conv2d",)
"""Anchors ``conv_chains`` puts two of in a row in one group: a GPU ``auto_schedule`` computes the first per
block of the second, halo included (other anchors, and more than two, would be stored whole)."""

VIEW_OP = "reshape"
"""A reshape of a contiguous tensor is a view: it stays a group of its own, which the executor runs as
no kernel at all (the same memory, read with the new shape)."""


@dataclass(frozen=True)
class UnfusedEdge:
    """An edge left between two groups, with the rule that kept them apart."""

    producer: str
    consumer: str
    reason: str

    def __str__(self) -> str:
        return f"{self.producer} -> {self.consumer}: {self.reason}"


@dataclass
class FusionReport:
    """What ``fuse_ops`` did: each group's name and ops (a recomputed copy is marked), every edge it did
    not fuse, and for each value read by several groups whether it is kept or recomputed. ``members``
    names each group's nodes as the unfused edges do (``%k (op)``), in the order of ``groups``.
    ``report()`` returns the report itself, so ``exe.fusion_report()`` reads like ``exe.fusion_report``."""

    groups: list[tuple[str, list[str]]] = field(default_factory=list)
    unfused: list[UnfusedEdge] = field(default_factory=list)
    shared: list[str] = field(default_factory=list)
    members: list[list[str]] = field(default_factory=list)

    def __call__(self) -> "FusionReport":
        return self

    def __str__(self) -> str:
        lines = [f"{len(self.groups)} fused groups:"]
        lines += [f"  {name}: {', '.join(ops)}" for name, ops in self.groups]
        lines.append(f"{len(self.unfused)} edges not fused:")
        lines += [f"  {edge}" for edge in self.unfused]
        if self.shared:
            lines.append(f"{len(self.shared)} values read by several groups:")
            lines += [f"  {line}" for line in self.shared]
        return "\n".join(lines)


class Group:
    """Op calls computed by one kernel: ``members`` by position, ``copies`` the ids of recomputed ones."""

    def __init__(self, call: Call, position: int):
        self.members: dict[int, tuple[int, Call]] = {id(call): (position, call)}
        self.copies: set[int] = set()
        self.pattern = call.pattern

    def ordered(self) -> list[Call]:
        return [call for _, call in sorted(self.members.values(), key=lambda m: m[0])]

    @property
    def anchor(self) -> Call:
        return max(self.members.values(), key=lambda m: (m[1].pattern, -m[0]))[1]

    def originals(self) -> set[int]:
        return set(self.members) - self.copies


class Planner:
    """Groups the op calls of one function body under ``rules``."""

    def __init__(self, body: Expr, rules: FusionRules):
        self.body, self.rules = body, rules
        self.numbers = numbering(body)
        nodes = post_order(body)
        self.index = {id(n): k for k, n in enumerate(nodes)}
        self.nodes = nodes
        self.calls = [n for n in nodes if is_op_call(n)]
        self.consumers: dict[int, set[int]] = {}
        results = _results(body)
        result_tuples = {id(r) for r in results if isinstance(r, Tuple)}
        for node in nodes:
            if id(node) not in result_tuples and not (isinstance(node, Call) and node.op is STOP_FUSION):
                for child in node.children():
                    self.consumers.setdefault(id(source(child)), set()).add(id(node))
        for node in results:
            self.consumers.setdefault(id(source(node)), set()).add(RESULT)
        self.group = {id(c): Group(c, self.index[id(c)]) for c in self.calls}
        self.report = FusionReport()

    def describe(self, call: Call) -> str:
        where = f"%{self.numbers[id(call)]}" if id(call) in self.numbers else "the result"
        return f"{where} ({call.op_name})"

    def producers(self, call: Call) -> list[tuple[Call, bool]]:
        """The op calls ``call`` reads, each once, with whether a stop_fusion separates them."""
        found: dict[int, tuple[Call, bool]] = {}
        for arg in call.args:
            src = source(arg)
            if is_op_call(src):
                stopped = src is not arg or found.get(id(src), (src, False))[1]
                found[id(src)] = (src, stopped)
        return list(found.values())

    # queries ----------------------------------------------------------------------------------------
    def outside_users(self, call_id: int, members: set[int]) -> set[int]:
        return self.consumers.get(call_id, set()) - members

    def inputs(self, group_ids: set[int], copies: set[int]) -> set[int]:
        """Ids of the values a would-be group reads from outside (its originals and copies)."""
        found = set()
        for k in group_ids | copies:
            call = self.node(k)
            assert isinstance(call, Call), "group members are calls"
            for arg in call.args:
                src = id(source(arg))
                if src not in group_ids and src not in copies:
                    found.add(src)
        return found

    def node(self, k: int) -> Expr:
        return self.nodes[self.index[k]]

    def reaches(self, starts: set[int], targets: set[int]) -> bool:
        """Whether a path of consumers leads from one of ``starts`` to one of ``targets``."""
        if not targets:
            return False
        limit = max(self.index[t] for t in targets)
        frontier = [s for s in starts if s != RESULT]
        seen = set(frontier)
        while frontier:
            k = frontier.pop()
            if k in targets:
                return True
            for user in self.consumers.get(k, ()):
                if user != RESULT and user not in seen and self.index[user] <= limit:
                    seen.add(user)
                    frontier.append(user)
        return False

    def cyclic(self, originals: set[int], copies: set[int]) -> bool:
        """Whether a group of ``originals`` (and recomputed ``copies``) would read a value that depends
        on one of its own outputs."""
        leaving = {u for k in originals for u in self.outside_users(k, originals | copies)}
        return self.reaches(leaving, self.inputs(originals, copies))

    def cheap(self, group: Group) -> bool:
        return len(group.members) <= self.rules.recompute_max_ops and \
            all(c.pattern in _CHEAP for _, c in group.members.values())

    def horizontal(self, gp: Group, gc: Group, consumer: Call) -> bool:
        """Anchors side by side: both groups hold matrix products (:data:`SIDE_BY_SIDE_ANCHORS`), they meet
        in an elementwise op, and no anchor of the consumer's group depends on the producer's."""
        anchors = {k for k, (_, c) in gc.members.items() if c.pattern == Pattern.OUT_ELEMWISE_FUSABLE}
        every = [c for g in (gp, gc) for _, c in g.members.values() if c.pattern == Pattern.OUT_ELEMWISE_FUSABLE]
        return (self.rules.combine_anchors and gp.pattern == gc.pattern == Pattern.OUT_ELEMWISE_FUSABLE
                and all(c.op_name in SIDE_BY_SIDE_ANCHORS for c in every)
                and consumer.pattern <= Pattern.BROADCAST
                and not self.reaches(gp.originals(), anchors))

    def chained(self, gp: Group, gc: Group, consumer: Call) -> bool:
        """A convolution reading a group of one convolution (:data:`CHAINED_ANCHORS`), under
        ``rules.conv_chains``: the consumer is its group's only anchor."""
        anchors = [[c for _, c in g.members.values() if c.pattern == Pattern.OUT_ELEMWISE_FUSABLE] for g in (gp, gc)]
        return (self.rules.conv_chains and consumer.op_name in CHAINED_ANCHORS
                and len(anchors[0]) == 1 and anchors[0][0].op_name in CHAINED_ANCHORS
                and anchors[1] == [consumer])

    # planning -------------------------------------------------------------------------------------
    def obstacle(self, producer: Call, consumer: Call, stopped: bool) -> str | None:
        """Why the edge cannot be fused by pattern or rule, or ``None``."""
        rules = self.rules
        if stopped:
            return "a stop_fusion annotation separates them"
        for call in (producer, consumer):
            if call.op_name in rules.never_fuse:
                return f"{call.op_name} is in FusionRules.never_fuse"
            if call.op_name == VIEW_OP:
                return f"{self.describe(call)} is a view of its input's memory: it needs no kernel"
        gp, gc = self.group[id(producer)], self.group[id(consumer)]
        sliced = rules.slice_anchors and consumer.op_name == "strided_slice" and \
            gp.pattern == Pattern.OUT_ELEMWISE_FUSABLE and gc.pattern <= Pattern.INJECTIVE
        if not rules.allows(gp.pattern, gc.pattern) and not sliced and not self.horizontal(gp, gc, consumer) \
                and not self.chained(gp, gc, consumer):
            allowed = ", ".join(map(str, sorted(rules.may_follow[gp.pattern]))) or "nothing"
            return (f"{_article(gc.pattern)} {gc.pattern} group ({gc.anchor.op_name}) may not follow "
                    f"{_article(gp.pattern)} {gp.pattern} group ({gp.anchor.op_name}); after {gp.pattern} the rules "
                    f"allow {allowed}")
        size = len(gp.members) + len(gc.members)
        if size > rules.max_group_size:
            return f"the group would have {size} ops, more than max_group_size={rules.max_group_size}"
        return None

    def fuse_edge(self, producer: Call, consumer: Call, stopped: bool) -> str | None:
        """Fuse one edge; the reason it was not, or ``None``."""
        gp, gc = self.group[id(producer)], self.group[id(consumer)]
        if gp is gc:
            return None
        reason = self.obstacle(producer, consumer, stopped)
        if reason is not None:
            return reason
        merged = gp.originals() | gc.originals()
        users = self.outside_users(id(producer), merged | gc.copies | gp.copies)
        choice = self.rules.shared_values
        if users and choice == "separate":
            result = " and is a result of the function" if RESULT in users else ""
            count = len(self.consumers[id(producer)] - {RESULT})
            return (f"{self.describe(producer)} has {count} consumers{result}; FusionRules.shared_values="
                    f"'separate' ends its group here, so this value is stored")
        if users and choice == "recompute" and self.cheap(gp):
            return self.recompute(gp, gc, consumer)
        copies = (gp.copies | gc.copies) - merged
        if self.cyclic(merged, copies):
            if users and choice == "auto" and self.cheap(gp):
                return self.recompute(gp, gc, consumer)
            return ("fusing them would make a cycle: a value leaving the group would come back into it "
                    "through another group")
        gc.members.update(gp.members)
        gc.copies = copies
        gc.pattern = max(gc.pattern, gp.pattern)
        for k in gp.originals():
            self.group[k] = gc
        return None

    def recompute(self, gp: Group, gc: Group, consumer: Call) -> str | None:
        """Copy the cheap group ``gp`` into ``gc`` (for ``gc``'s reads only)."""
        copies = gc.copies | (set(gp.members) - gc.originals())
        if self.cyclic(gc.originals(), copies):
            return ("recomputing the producer here would make a cycle: a value leaving the group would come "
                    "back into it through another group")
        for k, member in gp.members.items():
            if k not in gc.members:
                gc.members[k] = member
            self.consumers[k] = self.consumers.get(k, set()) - set(gc.members)
        gc.copies = copies
        gc.pattern = max(gc.pattern, gp.pattern)
        names = ", ".join(c.op_name for c in gp.ordered())
        self.report.shared.append(f"{self.describe(gp.ordered()[-1])} is recomputed by {self.describe(consumer)}'s "
                                  f"group ({names}: cheaper than storing and loading it)")
        return None

    def plan(self) -> list[Group]:
        for consumer in self.calls:
            for producer, stopped in self.producers(consumer):
                reason = self.fuse_edge(producer, consumer, stopped)
                if reason is not None:
                    self.report.unfused.append(UnfusedEdge(self.describe(producer), self.describe(consumer), reason))
        groups = list({id(g): g for g in self.group.values()}.values())
        for g in groups:
            members = g.originals()
            for call in g.ordered():
                if id(call) in g.copies:
                    continue
                users = self.outside_users(id(call), members | g.copies)
                if users and call is not g.ordered()[-1] and len(self.consumers.get(id(call), ())) > len(users):
                    self.report.shared.append(f"{self.describe(call)} is kept: computed once in its group and "
                                              f"stored for its {len(users)} other reader(s)")
        return sorted(groups, key=lambda g: max(p for p, _ in g.members.values()))


def _results(body: Expr) -> list[Expr]:
    """The values a function returns: its body, or the fields of its body tuple (and theirs)."""
    if isinstance(body, Tuple):
        return [body] + [r for f in body.fields for r in _results(f)]
    return [body]


def source(expr: Expr) -> Expr:
    """``expr`` with ``stop_fusion`` annotations looked through."""
    while isinstance(expr, Call) and expr.op is STOP_FUSION:
        expr = expr.args[0]
    return expr


def _article(word: object) -> str:
    return "an" if str(word)[0] in "aeiou" else "a"


def is_op_call(node: Expr) -> TypeGuard[Call]:
    return isinstance(node, Call) and not isinstance(node.op, Function) and node.op is not STOP_FUSION
