"""``fuse_ops``: group ops into primitive functions by pattern, under :class:`~..fusion_rules.FusionRules`.

The grouping and its rules are :mod:`.fusion_plan`'s. Each group becomes
``Call(Function(params, body, primitive=1, name="fused_<ops>"), inputs)`` whose body is the group's one
output, or a tuple of its outputs (every member read outside the group) read back with ``TupleGetItem``;
names repeat with ``_1``, ``_2`` suffixes. :func:`explain_fusion` reports the groups, every edge not fused
with the rule that stopped it, and which shared values are kept or recomputed. ``stop_fusion``
annotations are removed.
"""
from __future__ import annotations

from tesched.graph.annotation import STOP_FUSION
from tesched.graph.fusion_rules import FusionRules
from tesched.graph.ir import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from tesched.graph.passes.fusion_plan import FusionReport, Group, Planner, UnfusedEdge, is_op_call, source
from tesched.graph.visit import post_order

__all__ = ["FusionReport", "UnfusedEdge", "explain_fusion", "fuse_ops", "fuse_ops_with_report"]


def _primitive(group: Group, outputs: list[Call], name: str) -> tuple[Function, list[Expr]]:
    """The group as a primitive function, and the outside values it takes, in parameter order."""
    members = set(group.members)
    inputs: list[Expr] = []
    params: dict[int, Var] = {}
    inner: dict[int, Expr] = {}
    for call in group.ordered():
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
    body = inner[id(outputs[0])] if len(outputs) == 1 else Tuple([inner[id(c)] for c in outputs])
    fn = Function(list(params.values()), body, {"primitive": True, "name": name})
    return fn, inputs


def _group_names(groups: list[Group]) -> list[str]:
    names: list[str] = []
    seen: dict[str, int] = {}
    for g in groups:
        base = "fused_" + "_".join(c.op_name.replace(".", "_") for c in g.ordered())
        count = seen.get(base, 0)
        seen[base] = count + 1
        names.append(base if count == 0 else f"{base}_{count}")
    return names


def _group_order(groups: list[Group], planner: Planner) -> list[Group]:
    """The groups in an order where each comes after the groups it reads (they form no cycle)."""
    owner = {k: g for g in groups for k in g.originals()}
    deps: dict[int, set[int]] = {}
    for g in groups:
        found: set[int] = set()
        stack = [planner.node(k) for k in planner.inputs(g.originals(), g.copies)]
        while stack:
            node = stack.pop()
            if id(node) in owner:
                found.add(id(owner[id(node)]))
            elif not isinstance(node, (Var, Constant)):
                stack.extend(node.children())
        deps[id(g)] = found - {id(g)}
    ordered: list[Group] = []
    done: set[int] = set()
    pending = list(groups)
    while pending:
        ready = [g for g in pending if deps[id(g)] <= done]
        if not ready:
            raise AssertionError("fuse_ops: the groups depend on each other in a cycle")
        done.update(id(g) for g in ready)
        ordered += ready
        pending = [g for g in pending if id(g) not in done]
    return ordered


def fuse_ops_with_report(f: Function, rules: FusionRules | None = None) -> tuple[Function, FusionReport]:
    """``fuse_ops`` and ``explain_fusion`` in one planning."""
    planner = Planner(f.body, rules if rules is not None else FusionRules())
    groups = planner.plan()
    names = _group_names(groups)
    for group, name in zip(groups, names):
        planner.report.groups.append((name, [c.op_name + (" (recomputed)" if id(c) in group.copies else "")
                                             for c in group.ordered()]))
        planner.report.members.append([planner.describe(c) for c in group.ordered()])
    outer: dict[int, Expr] = {}

    def rebuilt(node: Expr) -> Expr:
        for n in post_order(node):
            if id(n) in outer:
                continue
            if isinstance(n, (Var, Constant)):
                outer[id(n)] = n
            elif isinstance(n, Call) and n.op is STOP_FUSION:
                outer[id(n)] = outer[id(n.args[0])]
            elif not is_op_call(n):
                outer[id(n)] = n.with_children([outer[id(c)] for c in n.children()])
        return outer[id(node)]

    name_of = {id(g): name for g, name in zip(groups, names)}
    for group in _group_order(groups, planner):
        members = group.originals()
        outputs = [c for c in group.ordered() if id(c) in members
                   and planner.outside_users(id(c), members | group.copies)]
        fn, inputs = _primitive(group, outputs, name_of[id(group)])
        call = Call(fn, [rebuilt(i) for i in inputs])
        for k, out in enumerate(outputs):
            outer[id(out)] = call if len(outputs) == 1 else TupleGetItem(call, k)
    return f.with_body(rebuilt(f.body)), planner.report


def fuse_ops(f: Function, rules: FusionRules | None = None) -> Function:
    """``f`` with its ops grouped into primitive functions (see the module doc); default rules if None."""
    return fuse_ops_with_report(f, rules)[0]


def explain_fusion(f: Function, rules: FusionRules | None = None) -> FusionReport:
    """The groups ``fuse_ops`` makes of ``f``, each edge it leaves with the rule that stopped it, and what
    became of values several groups read. Nodes are named ``%k`` as in ``print(f)``."""
    return fuse_ops_with_report(f, rules)[1]
