"""``fuse_ops``: group ops into primitive functions by pattern, under :class:`~..fusion_rules.FusionRules`.

Every op call starts as a group of its own. Visiting calls producers-first, each edge producer -> consumer
merges the producer's group into the consumer's unless, in this order:

1. an ``annotation.stop_fusion`` sits on the edge;
2. either op is in ``rules.never_fuse``;
3. the producer's value has other consumers (or is a result): a group has one output, so every group is
   a tree of ops whose only value leaving it is its root's, and groups can never form a cycle;
4. the consumer group's pattern may not follow the producer group's (``rules.may_follow``);
5. the merged group would exceed ``rules.max_group_size``.

Each group becomes ``Call(Function(params, body, primitive=1, name="fused_<ops>"), inputs)``; names repeat
with ``_1``, ``_2`` suffixes. :func:`explain_fusion` reports the groups and, for every edge not fused, the
rule that stopped it. ``stop_fusion`` annotations are removed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tesched.graph.annotation import STOP_FUSION
from tesched.graph.fusion_rules import FusionRules
from tesched.graph.ir import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from tesched.graph.text import numbering
from tesched.graph.visit import post_order


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
    """What ``fuse_ops`` did: each group's name and ops, and every edge it did not fuse. ``members`` names
    each group's nodes as the unfused edges do (``%k (op)``), in the order of ``groups``."""

    groups: list[tuple[str, list[str]]] = field(default_factory=list)
    unfused: list[UnfusedEdge] = field(default_factory=list)
    members: list[list[str]] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"{len(self.groups)} fused groups:"]
        lines += [f"  {name}: {', '.join(ops)}" for name, ops in self.groups]
        lines.append(f"{len(self.unfused)} edges not fused:")
        lines += [f"  {edge}" for edge in self.unfused]
        return "\n".join(lines)


class _Group:
    def __init__(self, call: Call, position: int):
        self.members: list[tuple[int, Call]] = [(position, call)]
        self.pattern = call.op.pattern  # type: ignore[union-attr]

    @property
    def anchor(self) -> Call:
        return max(self.members, key=lambda m: (m[1].op.pattern, -m[0]))[1]  # type: ignore[union-attr]

    def absorb(self, other: "_Group") -> None:
        self.members = sorted(other.members + self.members, key=lambda m: m[0])
        self.pattern = max(self.pattern, other.pattern)


class _Planner:
    """Groups the op calls of one function body."""

    def __init__(self, body: Expr, rules: FusionRules):
        self.body, self.rules = body, rules
        self.numbers = numbering(body)
        nodes = post_order(body)
        self.calls = [n for n in nodes if _is_op_call(n)]
        self.position = {id(c): k for k, c in enumerate(self.calls)}
        self.consumers: dict[int, set[int]] = {}
        results = _results(body)
        result_tuples = {id(r) for r in results if isinstance(r, Tuple)}
        for node in nodes:
            if id(node) not in result_tuples and not (isinstance(node, Call) and node.op is STOP_FUSION):
                for child in node.children():
                    self.consumers.setdefault(id(source(child)), set()).add(id(node))
        for node in results:
            self.consumers.setdefault(id(source(node)), set()).add(RESULT)
        self.group = {id(c): _Group(c, k) for k, c in enumerate(self.calls)}
        self.report = FusionReport()

    def describe(self, call: Call) -> str:
        where = f"%{self.numbers[id(call)]}" if id(call) in self.numbers else "the result"
        return f"{where} ({call.op_name})"

    def producers(self, call: Call) -> list[tuple[Call, bool]]:
        """The op calls ``call`` reads, each once, with whether a stop_fusion separates them."""
        found: dict[int, tuple[Call, bool]] = {}
        for arg in call.args:
            src = source(arg)
            if _is_op_call(src):
                stopped = src is not arg or found.get(id(src), (src, False))[1]
                found[id(src)] = (src, stopped)  # type: ignore[assignment]
        return list(found.values())

    def obstacle(self, producer: Call, consumer: Call, stopped: bool) -> str | None:
        """Why the edge cannot be fused, or ``None``."""
        rules = self.rules
        if stopped:
            return "a stop_fusion annotation separates them"
        for call in (producer, consumer):
            if call.op_name in rules.never_fuse:
                return f"{call.op_name} is in FusionRules.never_fuse"
        users = self.consumers[id(producer)]
        if len(users) > 1:
            result = " and is a result of the function" if RESULT in users else ""
            return (f"{self.describe(producer)} has {len(users - {RESULT})} consumers{result}; a fused group has one "
                    f"output, so this value is stored")
        gp, gc = self.group[id(producer)], self.group[id(consumer)]
        if not rules.allows(gp.pattern, gc.pattern):
            allowed = ", ".join(map(str, sorted(rules.may_follow[gp.pattern]))) or "nothing"
            return (f"{_article(gc.pattern)} {gc.pattern} group ({gc.anchor.op_name}) may not follow "
                    f"{_article(gp.pattern)} {gp.pattern} group ({gp.anchor.op_name}); after {gp.pattern} the rules "
                    f"allow {allowed}")
        size = len(gp.members) + len(gc.members)
        if size > rules.max_group_size:
            return f"the group would have {size} ops, more than max_group_size={rules.max_group_size}"
        return None

    def plan(self) -> list[_Group]:
        for consumer in self.calls:
            for producer, stopped in self.producers(consumer):
                reason = self.obstacle(producer, consumer, stopped)
                if reason is not None:
                    self.report.unfused.append(UnfusedEdge(self.describe(producer), self.describe(consumer), reason))
                    continue
                gp, gc = self.group[id(producer)], self.group[id(consumer)]
                gc.absorb(gp)
                for _, member in gp.members:
                    self.group[id(member)] = gc
        groups = list({id(g): g for g in self.group.values()}.values())
        return sorted(groups, key=lambda g: g.members[-1][0])


RESULT = -1
"""Stands for the function's result among the consumers of a value."""


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


def _is_op_call(node: Expr) -> bool:
    return isinstance(node, Call) and not isinstance(node.op, Function) and node.op is not STOP_FUSION


def _primitive(group: _Group, name: str) -> tuple[Function, list[Expr]]:
    """The group as a primitive function, and the outside values it takes, in parameter order."""
    members = {id(c) for _, c in group.members}
    inputs: list[Expr] = []
    params: dict[int, Var] = {}
    inner: dict[int, Expr] = {}
    for _, call in group.members:
        args = []
        for arg in call.args:
            src = source(arg)
            if id(src) in members:
                args.append(inner[id(src)])
                continue
            if id(src) not in params:
                params[id(src)] = Var(f"p{len(params)}", src.tensor_type)
                inputs.append(src)
            args.append(params[id(src)])
        inner[id(call)] = Call(call.op, args, call.attrs)
    root = group.members[-1][1]
    fn = Function(list(params.values()), inner[id(root)], {"primitive": True, "name": name})
    return fn, inputs


def _group_names(groups: list[_Group]) -> list[str]:
    names, seen = [], {}
    for g in groups:
        base = "fused_" + "_".join(c.op_name.replace(".", "_") for _, c in g.members)
        count = seen.get(base, 0)
        seen[base] = count + 1
        names.append(base if count == 0 else f"{base}_{count}")
    return names


def fuse_ops_with_report(f: Function, rules: FusionRules | None = None) -> tuple[Function, FusionReport]:
    """``fuse_ops`` and ``explain_fusion`` in one planning."""
    planner = _Planner(f.body, rules if rules is not None else FusionRules())
    groups = planner.plan()
    roots = {}
    for group, name in zip(groups, _group_names(groups)):
        fn, inputs = _primitive(group, name)
        roots[id(group.members[-1][1])] = (fn, inputs)
        planner.report.groups.append((name, [c.op_name for _, c in group.members]))
        planner.report.members.append([planner.describe(c) for _, c in group.members])
    outer: dict[int, Expr] = {}
    for node in post_order(f.body):
        if isinstance(node, (Var, Constant)):
            outer[id(node)] = node
        elif isinstance(node, Call) and node.op is STOP_FUSION:
            outer[id(node)] = outer[id(node.args[0])]
        elif id(node) in roots:
            fn, inputs = roots[id(node)]
            outer[id(node)] = Call(fn, [outer[id(i)] for i in inputs])
        elif isinstance(node, (Tuple, TupleGetItem)) or (isinstance(node, Call) and isinstance(node.op, Function)):
            outer[id(node)] = node.with_children([outer[id(c)] for c in node.children()])
    return f.with_body(outer[id(f.body)]), planner.report


def fuse_ops(f: Function, rules: FusionRules | None = None) -> Function:
    """``f`` with its ops grouped into primitive functions (see the module doc); default rules if None."""
    return fuse_ops_with_report(f, rules)[0]


def explain_fusion(f: Function, rules: FusionRules | None = None) -> FusionReport:
    """The groups ``fuse_ops`` makes of ``f`` and, for each edge it leaves, the rule that stopped it.
    Nodes are named ``%k`` as in ``print(f)``."""
    return fuse_ops_with_report(f, rules)[1]
