"""``partition``: offload the subgraphs that match user patterns to functions of an external C library.

``partition(graph, patterns, library)`` takes a pattern table, ``{"my_conv_add_relu": pattern("nn.conv2d",
"add", "nn.relu"), ...}`` (or a list of ``(name, pattern)`` pairs), where each name is a function declared
in ``library`` (an :class:`~.external.ExternalLibrary`). Patterns are tried in table order, so put longer
ones first; each finds its matches producers first, and a call belongs to at most one match (see
:mod:`.chain_pattern` for what matches). Each match becomes one call of the op ``external.<name>`` (see
:mod:`.external_op`) on the match's free inputs, in order, which are the function's inputs ``in0, in1,
...`` in its calling convention (see :mod:`.external`); the rest of the graph is unchanged and is
compiled by tesched as before: ``build`` fuses it with ``fuse_ops``, while each external call stays a
group of its own.

Everything is checked here, before anything runs: every match's free inputs and result must agree with
the declared signature in number, dtype, rank and dimensions; then the library is compiled or loaded and
every declared symbol found (for C source, each definition is checked against its declared prototype by
the compiler). Each failure raises :class:`~.external.ExternalFunctionError` naming the function, the
match (``%k`` as in ``print(graph)``) and what differs. Run the graph passes that change the ops first
(``optimize(f, disabled_passes=["fuse_ops"])`` turns conv + bias_add + batch_norm + relu into conv + add +
relu), then partition, then ``build``.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from tesched.graph.chain_pattern import ChainPattern, Match
from tesched.graph.external import ExternalFunction, ExternalFunctionError, ExternalLibrary
from tesched.graph.external_op import ExternalOp, external_op
from tesched.graph.ir import Call, Expr, Function, Var
from tesched.graph.text import numbering
from tesched.graph.visit import post_order, rewrite, use_counts

PatternTable = Mapping[str, ChainPattern] | Sequence[tuple[str, ChainPattern]]


def _pattern_table(patterns: PatternTable, library: ExternalLibrary) -> list[tuple[ExternalFunction, ChainPattern]]:
    pairs = list(patterns.items()) if isinstance(patterns, Mapping) else list(patterns)
    table = []
    for entry in pairs:
        if not (isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[1], ChainPattern)):
            raise TypeError(f"partition: patterns map function names to pattern(...), got {entry!r}")
        table.append((library.function(entry[0]), entry[1]))
    return table


def _describe(match: Match, pattern: ChainPattern, numbers: Mapping[int, int]) -> str:
    where = f"%{numbers[id(match.root)]}" if id(match.root) in numbers else "the result"
    return f"the match of {pattern} ending at {where}"


def _check(function: ExternalFunction, pattern: ChainPattern, match: Match, numbers: Mapping[int, int]) -> None:
    """Raise if the match's free inputs or result disagree with the function's declared signature."""
    try:
        function.bind([a.tensor_type for a in match.free_inputs], match.root.tensor_type)
    except ExternalFunctionError as err:
        raise ExternalFunctionError(f"{err} (in {_describe(match, pattern, numbers)}, whose free inputs are "
                                    f"{', '.join(str(a.checked_type) for a in match.free_inputs)} and whose "
                                    f"result is {match.root.checked_type})") from None


def _replaced_function(match: Match) -> Function:
    """The matched chain as a function of its free inputs ``p0, p1, ...``."""
    params = [Var(f"p{k}", a.tensor_type) for k, a in enumerate(match.free_inputs)]
    first = match.calls[0]
    taken = len(first.args)
    value: Expr = Call(first.op, params[:taken], first.attrs)
    for call, pos in zip(match.calls[1:], match.chain_positions):
        free = params[taken:taken + len(call.args) - 1]
        taken += len(free)
        value = Call(call.op, [*free[:pos], value, *free[pos:]], call.attrs)
    return Function(params, value)


def _free_inputs(root: Call, match: Match) -> list[Expr]:
    """The free inputs of ``root``, a rebuilt copy of ``match``'s root (same structure, new arguments)."""
    chain = [root]
    for pos in reversed(match.chain_positions):
        inner = chain[-1].args[pos]
        assert isinstance(inner, Call), "a matched chain links calls"
        chain.append(inner)
    chain.reverse()
    free = list(chain[0].args)
    for call, pos in zip(chain[1:], match.chain_positions):
        free += call.args[:pos] + call.args[pos + 1:]
    return free


def partition(graph: Function, patterns: PatternTable, library: ExternalLibrary) -> Function:
    """``graph`` with every match of ``patterns`` replaced by a call of its external function (see the
    module doc); raises :class:`~.external.ExternalFunctionError` on any mismatch."""
    if not isinstance(graph, Function):
        raise TypeError(f"partition: expected a graph Function, got {type(graph).__name__}")
    if not isinstance(library, ExternalLibrary):
        raise TypeError(f"partition: library must be an ExternalLibrary, got {type(library).__name__}")
    table = _pattern_table(patterns, library)
    consumers, numbers, nodes = use_counts(graph.body), numbering(graph.body), post_order(graph.body)
    taken: set[int] = set()
    replacements: dict[int, tuple[Match, ExternalOp]] = {}
    for function, pattern in table:
        for node in nodes:
            match = pattern.match(node, consumers, taken)
            if match is None:
                continue
            _check(function, pattern, match, numbers)
            taken.update(id(c) for c in match.calls)
            op = external_op(library, function, _replaced_function(match))
            replacements[id(match.root)] = (match, op)
    library.load()

    def replace(node: Expr, original: Expr) -> Expr | None:
        if id(original) not in replacements:
            return None
        match, op = replacements[id(original)]
        assert isinstance(node, Call), "a match's root is a call"
        return Call(op, _free_inputs(node, match))

    return graph.with_body(rewrite(graph.body, replace))
